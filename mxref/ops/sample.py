"""Per-element random operators ``_sample_<dist>``: the distribution's parameters as arrays.

``mx.nd.random.gamma(alpha, beta, shape)`` with NDArray ``alpha`` and ``beta`` draws ``shape``
samples from ``Gamma(alpha[i], beta[i])`` for every element ``i``: the output shape is
``alpha.shape + shape`` (MXNet's ``multisample_op.h``). ``<dist>`` is each row of
``random_dists.DISTS``; the parameter arrays (one or two, MXNet's input names: ``mu``/``sigma``
for normal, ``k``/``p`` for negative_binomial, ...) must have one shape and one dtype. The output is
float32 unless ``dtype`` says otherwise, also for float64 parameters, as in MXNet.
Like the ``_random_*`` operators they draw from the context's ``'random'`` resource, so
``mx.random.seed`` replays them. Their gradient is zero for every parameter array, as MXNet
registers it (``MakeZeroGradNodes``): the samples are not reparameterised.

A bad parameter value (a negative ``sigma``) raises an error at the next wait; MXNet returns
meaningless numbers there.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .elemwise import zero_grads
from .random_dists import DISTS, sample
from .registry import OpDef, Param, assign, register


def _shape(op: str):
    def infer(params, in_shapes):
        if any(d <= 0 for d in params["shape"]):
            raise MXNetError(f"{op}: shape parameter must be non-zero within each dimension, "
                             f"got {params['shape']}")
        known = next((tuple(s) for s in in_shapes if s is not None), None)
        for s in in_shapes:
            if s is not None and tuple(s) != known:
                raise MXNetError(f"{op}: the parameter arrays must have one shape, got "
                                 f"{[tuple(x) if x is not None else None for x in in_shapes]}")
        if known is None:
            return list(in_shapes), [None]
        return [known] * len(in_shapes), [known + tuple(params["shape"])]
    return infer


def _type(op: str):
    def infer(params, in_types):
        known = next((t for t in in_types if t is not None), None)
        if any(t is not None and t != known for t in in_types):
            raise MXNetError(f"{op}: the parameter arrays must have one dtype, got "
                             f"{[getattr(t, 'name', t) for t in in_types]}")
        return [known] * len(in_types), [params["dtype"] or np.dtype(np.float32)]
    return infer


def _sampler(op: str, dist: str):
    def forward(octx, params, inputs, outputs, req):
        out = outputs[0]
        # Each parameter broadcasts against its samples: (*param_shape, *[1] * len(shape)).
        per = [a.reshape(a.shape + (1,) * (out.ndim - a.ndim)) for a in inputs]
        assign(out, req[0], sample(op, dist, octx.rng, out.shape, per).astype(out.dtype, copy=False))
    return forward


_PARAMS = {
    "shape": Param("shape", (), doc="Samples drawn per element of the parameter arrays."),
    "dtype": Param("dtype", None, choices=(None, *map(np.dtype, (np.float16, np.float32, np.float64))),
                   doc="Output type (float32 when not given)."),
}

for _dist, _d in DISTS.items():
    _name = f"_sample_{_dist}"
    register(OpDef(_name, _sampler(_name, _dist), arguments=_d.inputs, resources=("random",),
                   params=_PARAMS, infer_shape=_shape(_name), infer_type=_type(_name),
                   gradient=zero_grads, aliases=(f"sample_{_dist}",),
                   doc=f"{_name}({', '.join(_d.inputs)}, shape, dtype): for every element i of the "
                       f"parameter arrays, ``shape`` samples from the {_dist} distribution with "
                       "parameters ({}).".format(", ".join(f"{n}[i]" for n in _d.inputs))))
