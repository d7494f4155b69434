"""Random operators: ``_random_uniform``, ``_random_normal``, ``_random_randint``, ``_shuffle``.

They declare the ``'random'`` resource: the kernel draws from ``octx.rng``, the context's generator,
which is an engine variable the op writes, so draws happen in push order and ``mx.random.seed``
makes them reproducible. Bad parameters (a negative ``scale``, ``low >= high``) are found by the
kernel, so the error surfaces at the next wait, as in MXNet (semantics item 16).
Random ops have no gradient: their outputs do not depend on any input's value.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .registry import OpDef, Param, assign, register


def _shape_rule(params, in_shapes):
    # NOTE: no shape given is an unknown shape, as in MXNet: a graph infers it from the consumers;
    # mx.nd.random.* pass shape (1,) or out='s shape.
    shape = params["shape"]
    return [], [tuple(shape) if shape is not None else None]


def _type_rule(default):
    def infer(params, in_types):
        return [], [params["dtype"] or np.dtype(default)]
    return infer


def _common(extra: dict, dtype_param: Param) -> dict:
    return dict(extra, shape=Param("shape", None), ctx=Param("str", ""), dtype=dtype_param)


def _uniform(octx, params, inputs, outputs, req):
    low, high = params["low"], params["high"]
    if low > high:
        raise MXNetError(f"_random_uniform: low ({low}) must be <= high ({high})")
    out = outputs[0]
    assign(out, req[0], octx.rng.uniform(low, high, size=out.shape).astype(out.dtype))


def _normal(octx, params, inputs, outputs, req):
    loc, scale = params["loc"], params["scale"]
    if scale < 0:
        raise MXNetError(f"_random_normal: scale ({scale}) must be non-negative")
    out = outputs[0]
    assign(out, req[0], octx.rng.normal(loc, scale, size=out.shape).astype(out.dtype))


def _randint(octx, params, inputs, outputs, req):
    low, high = params["low"], params["high"]
    if low >= high:
        raise MXNetError(f"_random_randint: low ({low}) must be < high ({high})")
    out = outputs[0]
    assign(out, req[0], octx.rng.integers(low, high, size=out.shape, dtype=out.dtype))


def _no_inputs(node, ograds):
    return []


_FLOAT = Param("dtype", None, choices=(None, *map(np.dtype, (np.float16, np.float32, np.float64))))
register(OpDef("_random_uniform", _uniform, arguments=(), resources=("random",),
               params=_common({"low": Param("float", 0.0), "high": Param("float", 1.0)}, _FLOAT),
               infer_shape=_shape_rule, infer_type=_type_rule(np.float32), gradient=_no_inputs,
               aliases=("random_uniform", "uniform"),
               doc="_random_uniform(low=0, high=1, shape, dtype): samples from U[low, high)."))
register(OpDef("_random_normal", _normal, arguments=(), resources=("random",),
               params=_common({"loc": Param("float", 0.0), "scale": Param("float", 1.0)}, _FLOAT),
               infer_shape=_shape_rule, infer_type=_type_rule(np.float32), gradient=_no_inputs,
               aliases=("random_normal", "normal"),
               doc="_random_normal(loc=0, scale=1, shape, dtype): samples from N(loc, scale^2)."))
register(OpDef("_random_randint", _randint, arguments=(), resources=("random",),
               params=_common({"low": Param("int"), "high": Param("int")},
                              Param("dtype", None, choices=(None, np.dtype(np.int32), np.dtype(np.int64)))),
               infer_shape=_shape_rule, infer_type=_type_rule(np.int32), gradient=_no_inputs,
               aliases=("random_randint",),
               doc="_random_randint(low, high, shape, dtype=int32): integers from [low, high)."))


def _shuffle(octx, params, inputs, outputs, req):
    x = inputs[0]
    perm = octx.rng.permutation(x.shape[0]) if x.ndim else None
    assign(outputs[0], req[0], x[perm] if perm is not None else x)


register(OpDef("_shuffle", _shuffle, aliases=("shuffle",), resources=("random",),
               doc="_shuffle(data): ``data`` with its first axis randomly permuted."))
