"""NDArray methods that are operators: ``a.sum(axis=1)`` is ``mx.nd.sum(a, axis=1)``."""
from __future__ import annotations

from typing import Callable, Dict

from ..ops import registry
from .ndarray import NDArray
from .register import make_function
from .utils import ones_like, zeros_like

__all__ = ["METHOD_OPS"]

# MXNet 1.x's NDArray methods that forward to an operator of the same name.
METHOD_OPS = (
    "sum", "mean", "max", "min", "prod", "nansum", "nanprod", "norm", "argmax", "argmin",
    "argmax_channel", "transpose", "flatten", "expand_dims", "squeeze", "swapaxes", "flip", "tile",
    "repeat", "pad", "split", "slice", "slice_axis", "slice_like", "take", "one_hot", "pick", "sort",
    "argsort", "topk", "round", "rint", "fix", "floor", "ceil", "trunc", "abs", "sign", "sqrt", "rsqrt",
    "cbrt", "rcbrt", "square", "reciprocal", "exp", "expm1", "log", "log10", "log2", "log1p", "sin",
    "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
    "degrees", "radians", "relu", "sigmoid", "softmax", "log_softmax", "softmin", "clip",
    "broadcast_to", "broadcast_like", "broadcast_axes", "diag", "shape_array", "size_array",
    "depth_to_space", "space_to_depth", "reshape_like",
)

_functions: Dict[str, Callable] = {}


def _method(op_name: str) -> Callable:
    def method(self, *args, **kwargs):
        fn = _functions.get(op_name)
        if fn is None:
            # Looked up at the first call: the operator may be registered after this module loads.
            fn = _functions[op_name] = make_function(registry.get(op_name), op_name)
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = op_name
    method.__doc__ = f"Same as ``mx.nd.{op_name}(self, *args, **kwargs)``."
    return method


def _reshaping_method(op_name: str) -> Callable:
    """``a.expand_dims(axis, inplace=False)``: with ``inplace=True`` the result is a reshaped view
    of ``a`` (shares its memory), as in MXNet; otherwise the operator's output (a new array)."""
    by_op = _method(op_name)

    def method(self, *args, inplace: bool = False, **kwargs):
        if not inplace:
            return by_op(self, *args, **kwargs)
        op = registry.get(op_name)
        kwargs.update(zip(op.params, args))
        _, (shape,) = op.infer_shape(op.parse_params(kwargs), [self.shape])
        return self.reshape(shape)

    method.__name__ = method.__qualname__ = op_name
    method.__doc__ = by_op.__doc__ + " ``inplace=True`` returns a view of ``self`` instead."
    return method


for _name in METHOD_OPS:
    if not hasattr(NDArray, _name):
        setattr(NDArray, _name, _reshaping_method(_name) if _name in ("expand_dims", "flatten", "squeeze")
                else _method(_name))

NDArray.zeros_like = zeros_like
NDArray.ones_like = ones_like
