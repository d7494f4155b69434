"""Per-element random operators: ``_sample_uniform`` and ``_sample_normal`` (parameters as arrays).

``mx.nd.random.uniform(low, high, shape)`` with NDArray ``low`` and ``high`` draws ``shape``
samples from ``U[low[i], high[i])`` for every element ``i``: the output shape is
``low.shape + shape`` (MXNet's ``sample_op.h``). The parameter arrays must have one shape. The
output is float32 unless ``dtype`` says otherwise, also for float64 parameters, as in MXNet.
Like the ``_random_*`` operators they draw from the context's ``'random'`` resource, so
``mx.random.seed`` replays them, and they have no gradient (MXNet registers none either).

A negative ``scale`` raises an error at the next wait; MXNet returns meaningless numbers there.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .registry import OpDef, Param, assign, register


def _shape(op: str):
    def infer(params, in_shapes):
        a, b = in_shapes
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise MXNetError(f"{op}: the parameter arrays must have one shape, got {tuple(a)} and {tuple(b)}")
        known = a if a is not None else b
        if known is None:
            return list(in_shapes), [None]
        return [known, known], [tuple(known) + tuple(params["shape"] or ())]
    return infer


def _type(params, in_types):
    return list(in_types), [params["dtype"] or np.dtype(np.float32)]


def _draws(first: np.ndarray, out: np.ndarray):
    """The parameter arrays broadcast against the samples: ``(*param_shape, *[1] * len(shape))``."""
    return first.reshape(first.shape + (1,) * (out.ndim - first.ndim))


def _uniform(octx, params, inputs, outputs, req):
    out = outputs[0]
    low, high = (_draws(a, out) for a in inputs)
    assign(out, req[0], octx.rng.uniform(low, high, size=out.shape).astype(out.dtype))


def _normal(octx, params, inputs, outputs, req):
    out = outputs[0]
    loc, scale = (_draws(a, out) for a in inputs)
    if (scale < 0).any():
        raise MXNetError(f"_sample_normal: scale must be non-negative, got {scale.min()}")
    assign(out, req[0], octx.rng.normal(loc, scale, size=out.shape).astype(out.dtype))


_PARAMS = {
    "shape": Param("shape", (), doc="Samples drawn per element of the parameter arrays."),
    "dtype": Param("dtype", None, choices=(None, *map(np.dtype, (np.float16, np.float32, np.float64))),
                   doc="Output type (float32 when not given)."),
}

register(OpDef("_sample_uniform", _uniform, arguments=("low", "high"), resources=("random",),
               params=_PARAMS, infer_shape=_shape("_sample_uniform"), infer_type=_type,
               aliases=("sample_uniform",),
               doc="_sample_uniform(low, high, shape, dtype): U[low[i], high[i]) for every element i."))
register(OpDef("_sample_normal", _normal, arguments=("mu", "sigma"), resources=("random",),
               params=_PARAMS, infer_shape=_shape("_sample_normal"), infer_type=_type,
               aliases=("sample_normal",),
               doc="_sample_normal(mu, sigma, shape, dtype): N(mu[i], sigma[i]^2) for every element i."))
