"""Creation operators: ``_zeros``, ``_ones``, ``_full``, ``_arange``, ``_eye``, ``zeros_like``,
``ones_like`` and ``_copy`` (``identity``).

The zero-input ones take their shape and dtype from parameters (``ctx`` is accepted and left to the
caller, which allocates on that context). ``zeros_like``/``ones_like`` read only their input's
shape, so they do not keep its memory alive (``ignore_inputs``). Gradients: ``_copy`` passes the
head gradient through; the others are constant, so their inputs get zero gradient.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from .elemwise import zero_grads
from .registry import OpDef, Param, assign, register

__all__ = ["arange_length"]


def _creation(params_extra: dict):
    base = {"shape": Param("shape", ()), "ctx": Param("str", ""),
            "dtype": Param("dtype", np.dtype(np.float32))}
    base.update(params_extra)
    return base


def _param_shape(params, in_shapes):
    shape = params["shape"]
    if shape is None:
        return [], [None]
    if any(d < -1 for d in shape):
        raise MXNetError(f"invalid shape {shape}: dimensions must be non-negative (or -1: unknown)")
    # -1 is an unknown dim, like 0, for the graph to fill in (sym.ones(shape=(-1, 3)) + x)
    return [], [tuple(max(d, 0) for d in shape)]


def _param_type(params, in_types):
    return [], [params["dtype"]]


def _fill(value_of):
    def kernel(octx, params, inputs, outputs, req):
        assign(outputs[0], req[0], value_of(params))
    return kernel


for _name, _value in (("_zeros", lambda p: 0), ("_ones", lambda p: 1)):
    register(OpDef(_name, _fill(_value), arguments=(), params=_creation({}),
                   infer_shape=_param_shape, infer_type=_param_type, gradient=lambda n, g: [],
                   doc=f"{_name}(shape, ctx, dtype): a new array filled with {_value(None)}."))


register(OpDef("_full", _fill(lambda p: p["value"]), arguments=(),
               params=_creation({"shape": Param("shape", None), "value": Param("float")}),
               infer_shape=_param_shape, infer_type=_param_type, gradient=lambda n, g: [],
               doc="_full(shape, ctx, dtype, value): a new array filled with ``value``."))


def _zeros_without_dtype_type(params, in_types):
    d = params["dtype"]
    return [], [np.dtype(np.float32) if d == -1 else np.dtype(_DTYPE_FLAGS[d])]


_DTYPE_FLAGS = {0: np.float32, 1: np.float64, 2: np.float16, 3: np.uint8, 4: np.int32, 5: np.int8,
                6: np.int64, 7: np.bool_}
register(OpDef("_zeros_without_dtype", _fill(lambda p: 0), arguments=(),
               params={"shape": Param("shape", None), "ctx": Param("str", ""), "dtype": Param("int", -1)},
               infer_shape=_param_shape, infer_type=_zeros_without_dtype_type,
               gradient=lambda n, g: [], doc="_zeros_without_dtype(shape, ctx, dtype=-1): zeros."))


def arange_length(start: float, stop, step: float) -> int:
    """Number of values of ``arange(start, stop, step)``; ``stop=None`` means ``[0, start)``."""
    if stop is None:
        start, stop = 0.0, start
    if step == 0:
        raise MXNetError("_arange: step cannot be 0")
    n = math.ceil((stop - start) / step)
    if n <= 0:
        raise MXNetError(f"_arange: invalid range start={start}, stop={stop}, step={step}")
    return n


def _arange_shape(params, in_shapes):
    if params["infer_range"]:
        raise MXNetError("_arange: infer_range=True is only meaningful inside a symbol graph")
    if params["repeat"] < 1:
        raise MXNetError(f"_arange: repeat must be positive, got {params['repeat']}")
    n = arange_length(params["start"], params["stop"], params["step"])
    return [], [(n * params["repeat"],)]


def _arange_kernel(octx, params, inputs, outputs, req):
    start, stop, step = params["start"], params["stop"], params["step"]
    if stop is None:
        start = 0.0
    n, dtype = outputs[0].shape[0] // params["repeat"], outputs[0].dtype
    # MXNet computes start + i*step in the output dtype, start and step cast to it first: an
    # integer arange truncates both (arange(1.3, 10, 1.3, dtype=int32) counts by 1) and wraps
    if dtype.kind in "iub":
        values = (math.trunc(start) + np.arange(n, dtype=np.int64) * math.trunc(step)).astype(dtype)
    else:
        values = dtype.type(start) + np.arange(n).astype(dtype) * dtype.type(step)
    assign(outputs[0], req[0], np.repeat(values, params["repeat"]))


register(OpDef("_arange", _arange_kernel, arguments=(),
               params={"start": Param("float"), "stop": Param("float_or_none", None),
                       "step": Param("float", 1.0), "repeat": Param("int", 1),
                       "infer_range": Param("bool", False), "ctx": Param("str", ""),
                       "dtype": Param("dtype", np.dtype(np.float32))},
               infer_shape=_arange_shape, infer_type=_param_type, gradient=lambda n, g: [],
               doc="_arange(start, stop=None, step=1, repeat=1): evenly spaced values."))


def _eye_shape(params, in_shapes):
    n, m = params["N"], params["M"]
    return [], [(n, m if m > 0 else n)]


def _eye_kernel(octx, params, inputs, outputs, req):
    out = outputs[0]
    assign(out, req[0], np.eye(out.shape[0], out.shape[1], params["k"], dtype=out.dtype))


register(OpDef("_eye", _eye_kernel, arguments=(),
               params={"N": Param("int"), "M": Param("int", 0), "k": Param("int", 0),
                       "ctx": Param("str", ""), "dtype": Param("dtype", np.dtype(np.float32))},
               infer_shape=_eye_shape, infer_type=_param_type, gradient=lambda n, g: [],
               doc="_eye(N, M=0, k=0): ones on the k-th diagonal of an N x M (M=0: N) matrix."))


for _name, _value in (("zeros_like", 0), ("ones_like", 1)):
    register(OpDef(_name, _fill(lambda p, v=_value: v), gradient=zero_grads, ignore_inputs=(0,),
                   doc=f"{_name}(data): an array of {_value}s with the shape and dtype of ``data``."))


def _copy_kernel(octx, params, inputs, outputs, req):
    r = req[0]
    if r == "write":
        np.copyto(outputs[0], inputs[0])
    elif r == "add":
        outputs[0] += inputs[0]
    # 'inplace': the output is the input, nothing to move


register(OpDef("_copy", _copy_kernel, aliases=("identity",), inplace=[(0, 0)],
               inplace_identity=[True], gradient=lambda node, ograds: [ograds[0]],
               doc="_copy(data) / identity(data): a copy of ``data``."))

