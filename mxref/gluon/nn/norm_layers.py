"""Per-sample normalisation layers over the operators of the same names: ``InstanceNorm``, ``GroupNorm``."""
from __future__ import annotations

from ..block import HybridBlock

__all__ = ["InstanceNorm", "GroupNorm"]


def _repr(block, extra: str = "") -> str:
    content = ", ".join(f"{k}={v!r}" for k, v in block._kwargs.items())
    return f"{type(block).__name__}({content}{extra})"


class InstanceNorm(HybridBlock):
    """Normalise each sample over every axis but the batch axis and ``axis`` (the channels), then
    scale by ``gamma`` and shift by ``beta`` (both of shape ``(in_channels,)``).

    As in MXNet 1.9.1, ``scale`` defaults to False (gamma stays ones, not learned) and
    ``epsilon`` to 1e-5; another ``axis`` than 1 is swapped into place around the operator.
    """

    def __init__(self, axis: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = False,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis, self._epsilon = axis, epsilon
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(in_channels,),
                                     init=gamma_initializer, allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(in_channels,),
                                    init=beta_initializer, allow_deferred_init=True)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = x.swapaxes(dim1=1, dim2=self._axis)
        return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon).swapaxes(dim1=1, dim2=self._axis)

    def __repr__(self) -> str:
        return _repr(self, f", in_channels={self.gamma.shape[0]}")


class GroupNorm(HybridBlock):
    """Split the channels (axis 1) into ``num_groups`` groups and normalise each group per sample;
    ``gamma`` and ``beta`` have one entry per group, shape ``(num_groups,)``, as in MXNet 1.9.1."""

    def __init__(self, num_groups: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
                 beta_initializer="zeros", gamma_initializer="ones", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center, "scale": scale}
        self._num_groups, self._epsilon = num_groups, epsilon
        self._center, self._scale = center, scale
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(num_groups,),
                                     init=gamma_initializer, allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(num_groups,),
                                    init=beta_initializer, allow_deferred_init=True)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups, eps=self._epsilon)

    def __repr__(self) -> str:
        return _repr(self)
