"""Basic layers: ``Sequential``, ``HybridSequential``, ``Dense``, ``Dropout``, ``BatchNorm``,
``Embedding``, ``Flatten``, ``LayerNorm``, ``Lambda``, ``HybridLambda``."""
from __future__ import annotations

import warnings

import numpy as np

from ... import ndarray as nd
from ..block import Block, HybridBlock
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "BatchNorm", "Embedding", "Flatten",
           "LayerNorm", "Lambda", "HybridLambda"]


class Sequential(Block):
    """Runs its children one after the other: ``net.add(nn.Dense(10), nn.Dense(2))``."""

    def add(self, *blocks: Block) -> None:
        """Append blocks (registered as children ``'0'``, ``'1'``, ...)."""
        for block in blocks:
            self.register_child(block)

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x

    def hybridize(self, active: bool = True, **kwargs) -> None:
        """Hybridize the HybridBlock children (warning when all are: HybridSequential is faster)."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are HybridBlocks. "
                          "Consider using HybridSequential for the best performance.", stacklevel=2)
        super().hybridize(active, **kwargs)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if not isinstance(layers, list):
            return layers
        net = type(self)(prefix=self._prefix)
        with net.name_scope():
            net.add(*layers)
        return net

    def __len__(self) -> int:
        return len(self._children)


class HybridSequential(HybridBlock):
    """``Sequential`` whose children are all HybridBlocks, so the whole chain can be hybridized."""

    add = Sequential.add
    __getitem__ = Sequential.__getitem__
    __len__ = Sequential.__len__

    def hybrid_forward(self, F, x):
        for block in self._children.values():
            x = block(x)
        return x


class Dense(HybridBlock):
    """Fully connected layer: ``activation(dot(x, weight.T) + bias)``.

    ``weight`` has shape ``(units, in_units)``; with ``in_units=0`` it is found on the first
    forward. ``flatten=True`` folds every axis after the first into the input features.
    """

    def __init__(self, units: int, activation=None, use_bias: bool = True, flatten: bool = True,
                 dtype="float32", weight_initializer=None, bias_initializer="zeros", in_units: int = 0,
                 **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units), init=weight_initializer,
                                          dtype=dtype, allow_deferred_init=True)
            self.bias = (self.params.get("bias", shape=(units,), init=bias_initializer, dtype=dtype,
                                         allow_deferred_init=True) if use_bias else None)
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        if bias is None:
            out = F.FullyConnected(x, weight, no_bias=True, num_hidden=self._units, flatten=self._flatten,
                                   name="fwd")
        else:
            out = F.FullyConnected(x, weight, bias, num_hidden=self._units, flatten=self._flatten, name="fwd")
        return self.act(out) if self.act is not None else out

    def __repr__(self) -> str:
        shape = self.weight.shape
        return f"Dense({shape[1] if shape[1] else None} -> {shape[0]}, {self.act or 'linear'})"


class Dropout(HybridBlock):
    """Zero a fraction ``rate`` of the inputs while training (scaling the rest by ``1/(1-rate)``).

    It follows the training flag (``autograd.record()``), not the recording flag.
    """

    def __init__(self, rate: float, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self) -> str:
        return f"Dropout(p = {self._rate}, axes={self._axes})"


class BatchNorm(HybridBlock):
    """Batch normalization; Gluon's defaults: ``epsilon=1e-5`` and a learned gamma (``scale=True``).

    ``running_mean`` / ``running_var`` are auxiliary states updated by training passes only.
    """

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, use_global_stats: bool = False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats}
        self.in_channels = in_channels
        shape = (in_channels,)
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=shape,
                                     init=gamma_initializer, allow_deferred_init=True, differentiable=scale)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=shape,
                                    init=beta_initializer, allow_deferred_init=True, differentiable=center)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=shape,
                                            init=running_mean_initializer, allow_deferred_init=True,
                                            differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=shape,
                                           init=running_variance_initializer, allow_deferred_init=True,
                                           differentiable=False)

    def cast(self, dtype) -> None:
        # NOTE: the statistics stay float32 under float16, as in MXNet.
        super().cast("float32" if np.dtype(dtype) == np.float16 else dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)


class Embedding(HybridBlock):
    """Rows of ``weight`` (shape ``(input_dim, output_dim)``) picked by integer indices."""

    def __init__(self, input_dim: int, output_dim: int, dtype="float32", weight_initializer=None,
                 sparse_grad: bool = False, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        # sparse_grad: the gradient is row_sparse (only the rows a batch looked up).
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, allow_deferred_init=True,
                                      grad_stype="row_sparse" if sparse_grad else "default")

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)


class Flatten(HybridBlock):
    """Reshape ``(N, d1, d2, ...)`` to ``(N, d1*d2*...)``."""

    def hybrid_forward(self, F, x):
        return F.Flatten(x)


class LayerNorm(HybridBlock):
    """Normalize over ``axis`` (default the last) per sample, then scale by gamma and shift by beta."""

    def __init__(self, axis: int = -1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._axis, self._epsilon = axis, epsilon
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(in_channels,),
                                     init=gamma_initializer, allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(in_channels,),
                                    init=beta_initializer, allow_deferred_init=True)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)


class Lambda(Block):
    """A Block around a function of NDArrays (or the name of an ``mx.nd`` function)."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise ValueError(f"Function name {function} is not found in ndarray.")
            function = getattr(nd, function)
        elif not callable(function):
            raise ValueError(f"Unrecognized function in lambda: {function} of type {type(function)}")
        self._func_impl = function

    def forward(self, *args):
        return self._func_impl(*args)


class HybridLambda(HybridBlock):
    """A HybridBlock around ``function(F, x, ...)`` (or the name of an operator in ``F``)."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise ValueError(f"Function name {function} is not found in symbol/ndarray.")
            name = function

            def function(F, *args):
                return getattr(F, name)(*args)
        elif not callable(function):
            raise ValueError(f"Unrecognized function in lambda: {function} of type {type(function)}")
        self._func = function

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)
