"""``multi_sum_sq`` and ``multi_lars``: the two steps LARS uses to scale many learning rates at once.

``multi_sum_sq(a_0, ..., a_{n-1}, num_arrays=n)`` is the float32 vector ``[sum(a_i^2)]`` (one
entry per array, accumulated in float32 whatever the input dtype). ``multi_lars`` turns the
weights' and gradients' sums of squares into layer-wise learning rates::

    w_norm = sqrt(weights_sum_sq);  g_norm = sqrt(grads_sum_sq)
    out = lrs * eta * w_norm / (g_norm * rescale_grad + wds * w_norm + eps)   where w_norm > 0 and g_norm > 0
    out = lrs                                                                 elsewhere

The LARS optimizer writes the result over its ``lrs`` array and hands it to ``preloaded_multi_sgd_*``.
No gradients (optimizer bookkeeping).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, elemwise_shape, elemwise_type, register

_F32 = np.dtype(np.float32)


def _sum_sq(octx, p, inputs, outputs, req):
    sums = np.empty(len(inputs), _F32)
    for i, a in enumerate(inputs):
        flat = a.astype(_F32, copy=False).reshape(-1)
        sums[i] = np.dot(flat, flat)
    assign(outputs[0], req[0], sums)


def _sum_sq_shape(p, ins):
    if p["num_arrays"] < 1:
        raise MXNetError(f"operator multi_sum_sq: num_arrays must be >= 1, got {p['num_arrays']}")
    return list(ins), [(p["num_arrays"],)]


register(OpDef(
    "multi_sum_sq", _sum_sq,
    arguments=lambda p: [f"array_{i}" for i in range(p["num_arrays"])],
    params={"num_arrays": Param("int", doc="number of input arrays.")},
    infer_shape=_sum_sq_shape, infer_type=lambda p, ts: (list(ts), [_F32]),
    doc="Compute the sums of squares of multiple arrays: ``out[i] = sum(array_i ** 2)`` (float32).\n\n"
        + __doc__))


def _lars(octx, p, inputs, outputs, req):
    lrs, w_sq, g_sq, wds = inputs
    w_norm, g_norm = np.sqrt(w_sq), np.sqrt(g_sq)
    valid = (w_norm > 0) & (g_sq > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = lrs * p["eta"] * w_norm / (g_norm * p["rescale_grad"] + wds * w_norm + p["eps"])
    assign(outputs[0], req[0], np.where(valid, scaled, lrs))


register(OpDef(
    "multi_lars", _lars, arguments=("lrs", "weights_sum_sq", "grads_sum_sq", "wds"),
    params={"eta": Param("float", doc="LARS eta"), "eps": Param("float", doc="LARS eps"),
            "rescale_grad": Param("float", 1.0, doc="Gradient rescaling factor")},
    infer_shape=elemwise_shape, infer_type=elemwise_type, inplace=[(0, 0)],
    doc="Compute the LARS coefficients of multiple weights and grads from their sums of squares.\n\n"
        + __doc__))
