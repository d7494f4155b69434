"""Random operators: ``_random_<dist>``, ``_random_<dist>_like``, ``_random_randint``, ``_shuffle``.

``<dist>`` is each row of ``random_dists.DISTS`` (uniform, normal, gamma, exponential, poisson,
negative_binomial, generalized_negative_binomial): ``_random_<dist>(params, shape, ctx, dtype)``
draws one distribution for the whole output; ``_random_<dist>_like(data, params)`` draws an array
of ``data``'s shape and dtype. They declare the ``'random'`` resource: the kernel draws from
``octx.rng``, the context's generator, which is an engine variable the op writes, so draws happen
in push order and ``mx.random.seed`` makes them reproducible. Bad parameters (a negative
``scale``, ``low > high``) are found by the kernel, so the error surfaces at the next wait, as in
MXNet. The samplers' outputs do not depend on any input's value: ``_random_<dist>`` has no inputs,
and the ``_like`` forms pass zeros back to ``data`` (MXNet's ``MakeZeroGradNodes``).
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .elemwise import zero_grads
from .random_dists import DISTS, sample
from .registry import OpDef, Param, assign, register

_FLOATS = tuple(map(np.dtype, (np.float16, np.float32, np.float64)))


def _shape_rule(params, in_shapes):
    # NOTE: no shape given (or shape=(), MXNet 1.x's unknown shape) is an unknown shape, as in
    # MXNet: a graph infers it from the consumers; mx.nd.random.* pass shape (1,) or out='s shape.
    shape = params["shape"]
    return [], [tuple(shape) if shape else None]


def _type_rule(default):
    def infer(params, in_types):
        return [], [params["dtype"] or np.dtype(default)]
    return infer


def _like_type(op: str):
    def infer(params, in_types):
        t = in_types[0]
        if t is not None and t not in _FLOATS:
            raise MXNetError(f"{op}: data must be float16, float32 or float64, got {t}")
        return [t], [t]
    return infer


def _common(extra: dict, dtype_param: Param) -> dict:
    return dict(extra, shape=Param("shape", None), ctx=Param("str", ""), dtype=dtype_param)


def _sampler(op: str, dist: str):
    names = tuple(DISTS[dist].params)

    def forward(octx, params, inputs, outputs, req):
        out = outputs[0]
        draws = sample(op, dist, octx.rng, out.shape, [params[n] for n in names])
        assign(out, req[0], draws.astype(out.dtype, copy=False))
    return forward


def _no_inputs(node, ograds):
    return []


_FLOAT = Param("dtype", None, choices=(None, *_FLOATS),
               doc="Output type (float32 when it cannot be inferred).")
_ALIASES = {"uniform": ("random_uniform", "uniform"), "normal": ("random_normal", "normal")}

for _dist, _d in DISTS.items():
    _name = f"_random_{_dist}"
    register(OpDef(_name, _sampler(_name, _dist), arguments=(), resources=("random",),
                   params=_common(_d.params, _FLOAT), infer_shape=_shape_rule,
                   infer_type=_type_rule(np.float32), gradient=_no_inputs,
                   aliases=_ALIASES.get(_dist, (f"random_{_dist}",)),
                   doc=f"{_name}({', '.join(_d.params)}, shape, ctx, dtype): samples from the "
                       f"{_dist} distribution (see mxref/ops/random_dists.py for its density)."))
    register(OpDef(f"{_name}_like", _sampler(f"{_name}_like", _dist), resources=("random",),
                   params=dict(_d.params), infer_type=_like_type(f"{_name}_like"),
                   gradient=zero_grads, ignore_inputs=(0,),
                   doc=f"{_name}_like(data, {', '.join(_d.params)}): samples from the {_dist} "
                       "distribution, shaped and typed like ``data``."))


def _randint(octx, params, inputs, outputs, req):
    low, high = params["low"], params["high"]
    if low >= high:
        raise MXNetError(f"_random_randint: low ({low}) must be < high ({high})")
    out = outputs[0]
    assign(out, req[0], octx.rng.integers(low, high, size=out.shape, dtype=out.dtype))


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
