"""``PixelShuffle1D/2D/3D``: move channel blocks into space (sub-pixel upsampling, Shi et al. 2016).

``(N, C*f1*...*fk, W1, ..., Wk) -> (N, C, W1*f1, ..., Wk*fk)``: output pixel
``y[n, c, w1*f1 + i1, ...] = x[n, c*f1*...*fk + i1*(f2*...*fk) + ..., w1, ...]``, done with
reshapes and one transpose, so the gradient is the inverse permutation, through the same ops.
"""
from __future__ import annotations

from ...hybrid_block import HybridBlock


def _factors(factor, k: int, name: str):
    factors = (int(factor),) * k if isinstance(factor, int) else tuple(int(f) for f in factor)
    if len(factors) != k or min(factors) < 1:
        from ....base import MXNetError
        raise MXNetError(f"{name}: factor must be a positive int or {k} positive ints, got {factor!r}")
    return factors


def _shuffle(F, x, factors):
    k = len(factors)
    prod = 1
    for f in factors:
        prod *= f
    x = F.reshape(x, shape=(0, -4, -1, prod) + (0,) * k)            # (N, C, f1*..*fk, W...)
    # split f1*..*fk one factor at a time: each -4 consumes a single input axis
    for i, f in enumerate(factors[:-1]):
        x = F.reshape(x, shape=(0, 0) + (0,) * i + (-4, f, -1) + (0,) * k)
    # axes now (N, C, f1..fk, W1..Wk): interleave to (N, C, W1, f1, ..., Wk, fk)
    axes = (0, 1) + tuple(a for i in range(k) for a in (2 + k + i, 2 + i))
    x = F.transpose(x, axes=axes)
    return F.reshape(x, shape=(0, 0) + (-3,) * k)


class PixelShuffle1D(HybridBlock):
    """``(N, f*C, W) -> (N, C, W*f)``."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 1, "PixelShuffle1D")

    def hybrid_forward(self, F, x):
        return _shuffle(F, x, self._factors)

    def __repr__(self):
        return f"{type(self).__name__}({self._factors[0]})"


class PixelShuffle2D(PixelShuffle1D):
    """``(N, f1*f2*C, H, W) -> (N, C, H*f1, W*f2)``."""

    def __init__(self, factor):
        HybridBlock.__init__(self)
        self._factors = _factors(factor, 2, "PixelShuffle2D")

    def __repr__(self):
        return f"{type(self).__name__}({self._factors})"


class PixelShuffle3D(PixelShuffle2D):
    """``(N, f1*f2*f3*C, D, H, W) -> (N, C, D*f1, H*f2, W*f3)``."""

    def __init__(self, factor):
        HybridBlock.__init__(self)
        self._factors = _factors(factor, 3, "PixelShuffle3D")
