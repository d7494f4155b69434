"""Shared pieces of the optimizer update operators: parameters, gradient preprocessing, shape/type rules."""
from __future__ import annotations

from typing import Callable, Dict, Sequence

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, register, write

__all__ = ["LR", "WD", "RESCALE", "CLIP", "LAZY", "preprocess", "clip_weights", "write", "update_op",
           "mp_type"]

LR = Param("float", doc="Learning rate.")
WD = Param("float", 0.0, doc="Weight decay (L2 penalty) coefficient.")
RESCALE = Param("float", 1.0, doc="Multiply the gradient by this first (often 1/batch_size).")
CLIP = Param("float", -1.0, doc="Clip the rescaled gradient to [-c, c]; negative means no clipping.")
LAZY = Param("bool", True, doc="Row-sparse lazy update; mxref stores dense arrays only, so it is inert.")


def preprocess(grad: np.ndarray, rescale_grad: float, clip_gradient: float,
               dtype: np.dtype = None) -> np.ndarray:
    """``clip(rescale_grad * grad, clip_gradient)`` as a new array (``dtype`` casts the gradient first)."""
    g = grad.astype(dtype) if dtype is not None and grad.dtype != dtype else grad
    g = g * rescale_grad
    if clip_gradient >= 0:
        np.clip(g, -clip_gradient, clip_gradient, out=g)
    return g


def clip_weights(w: np.ndarray, bound: float) -> np.ndarray:
    """Clip updated weights to ``[-bound, bound]`` when ``bound >= 0`` (RMSProp's ``clip_weights``)."""
    if bound >= 0:
        np.clip(w, -bound, bound, out=w)
    return w


def _same_shape(name: str):
    def infer_shape(params, in_shapes):
        known = next((s for s in in_shapes if s is not None), None)
        for s in in_shapes:
            if s is not None and s != known:
                raise MXNetError(f"operator {name}: weight, grad and states must have one shape, got "
                                 f"{list(in_shapes)}")
        return [known] * len(in_shapes), [known]
    return infer_shape


def _same_type(name: str):
    def infer_type(params, in_types):
        known = next((t for t in in_types if t is not None), None)
        for t in in_types:
            if t is not None and t != known:
                raise MXNetError(f"operator {name}: weight, grad and states must have one dtype, got "
                                 f"{[getattr(x, 'name', x) for x in in_types]}")
        return [known] * len(in_types), [known]
    return infer_type


def mp_type(name: str):
    """Type rule of the ``mp_*`` operators: weight and grad share a dtype, the states are float32."""
    f32 = np.dtype(np.float32)

    def infer_type(params, in_types):
        w = in_types[0] if in_types[0] is not None else in_types[1]
        if in_types[1] is not None and w is not None and in_types[1] != w:
            raise MXNetError(f"operator {name}: grad dtype {in_types[1].name} differs from weight "
                             f"dtype {w.name}")
        for t in in_types[2:]:
            if t is not None and t != f32:
                raise MXNetError(f"operator {name}: the float32 states (master weight, momentum) "
                                 f"must be float32, got {t.name}")
        return [w, w] + [f32] * (len(in_types) - 2), [w]
    return infer_type


def update_op(name: str, kernel: Callable, states: Sequence[str], params: Dict[str, Param], doc: str,
              *, arguments: Sequence[str] = ("weight", "grad"), infer_shape: Callable = None,
              infer_type: Callable = None) -> OpDef:
    """Register an update operator: ``arguments`` are read, ``states`` are mutated in place, and the
    one output (the new weight) may share the weight's memory."""
    return register(OpDef(name, kernel, arguments=tuple(arguments), aux_states=tuple(states),
                          params=params, infer_shape=infer_shape or _same_shape(name),
                          infer_type=infer_type or _same_type(name), inplace=[(0, 0)], doc=doc))
