"""``_sample_multinomial``: draws class indices from the categorical distributions in ``data``'s last axis.

``data`` has shape ``(d1, ..., dn-1, k)``; every row is a distribution over ``k`` classes (it must
sum to one). Each row gets ``shape`` draws, so the output has shape ``(d1, ..., dn-1, *shape)``
(one draw, shape ``(1,)``, for a single row and no ``shape``). A draw is MXNet's inverse-CDF
lookup: with ``u ~ U[0, 1)`` in float32 and the running sums ``c_j = p_0 + ... + p_j``, the class
is the first ``j`` with ``c_j >= u`` (a row that sums to less than ``u`` gives the last class).

``get_prob=True`` adds a second output, ``log p[y]`` in ``data``'s dtype, whose gradient is the
score-function (REINFORCE) estimator MXNet implements::

    d/dp_c  sum_j g_j log p[y_j]  =  sum_{j: y_j = c} g_j / p_c

so a reward fed as that output's head gradient trains the probabilities. The class indices carry
no gradient. ``dtype`` (int32 by default; uint8, float16, float32, float64) is the index type;
a ``k`` whose largest index the type cannot hold exactly is refused.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .elemwise import output_grads, zero_grads
from .nn._util import backward_node, entry
from .registry import OpDef, Param, register

_EXACT = {np.dtype(np.uint8): 2 ** 8 - 1, np.dtype(np.float16): 2 ** 11, np.dtype(np.float32): 2 ** 24}

PARAMS = {
    "shape": Param("shape", (), doc="Shape to be sampled from each random distribution."),
    "get_prob": Param("bool", False, doc="Whether to also return the log probability of the sampled "
                                         "result (for differentiating through the draws)."),
    "dtype": Param("dtype", np.dtype(np.int32),
                   choices=tuple(map(np.dtype, ("uint8", "int32", "float16", "float32", "float64"))),
                   doc="DType of the output in case this can't be inferred."),
}


def _shape(params, in_shapes):
    (d,) = in_shapes
    n_out = 2 if params["get_prob"] else 1
    if d is None:
        return [None], [None] * n_out
    if len(d) == 0:
        raise MXNetError("_sample_multinomial: data must have at least one axis, got shape ()")
    top = _EXACT.get(params["dtype"])
    if top is not None and d[-1] - 1 > top:
        raise MXNetError(f"_sample_multinomial: {d[-1]} classes (data shape {tuple(d)}) do not fit "
                         f"in dtype {params['dtype'].name}, which holds indices up to {top} exactly")
    shape = tuple(params["shape"])
    out = (shape or (1,)) if len(d) == 1 else tuple(d[:-1]) + shape
    return [tuple(d)], [out] * n_out


def _type(params, in_types):
    (t,) = in_types
    return [t], [params["dtype"]] + ([t] if params["get_prob"] else [])


def forward(octx, params, inputs, outputs, req):
    data = inputs[0]
    k = data.shape[-1]
    rows = data.reshape(-1, k)
    m = outputs[0].size // max(rows.shape[0], 1)
    u = octx.rng.random((rows.shape[0], m), dtype=np.float32)
    # MXNet accumulates in double and stores the running sums as float32.
    cum = np.cumsum(rows, axis=1, dtype=np.float64).astype(np.float32)
    idx = np.stack([np.searchsorted(c, r, side="left") for c, r in zip(cum, u)]) if rows.shape[0] else u
    idx = np.minimum(idx, k - 1).astype(np.int64)
    if req[0] != "null":
        outputs[0][...] = idx.reshape(outputs[0].shape)
    if params["get_prob"] and req[1] != "null":
        with np.errstate(divide="ignore"):
            logp = np.log(np.take_along_axis(rows, idx, axis=1).astype(np.float32))
        outputs[1][...] = logp.reshape(outputs[1].shape)


def backward(octx, params, inputs, outputs, req):
    ograd, data, samples = inputs
    if req[0] == "null":
        return
    k = data.shape[-1]
    rows = data.reshape(-1, k)
    idx = samples.reshape(rows.shape[0], -1).astype(np.int64)
    g = np.zeros_like(rows) if req[0] != "add" else outputs[0].reshape(rows.shape)
    contrib = ograd.reshape(idx.shape) / np.take_along_axis(rows, idx, axis=1)
    np.add.at(g, (np.arange(rows.shape[0])[:, None], idx), contrib.astype(rows.dtype))
    if req[0] != "add":
        outputs[0][...] = g.reshape(outputs[0].shape)


def gradient(node, ograds):
    if not node.params["get_prob"]:
        return zero_grads(node)
    ograds = output_grads(node, ograds)
    return [entry(backward_node(node, "_backward_sample_multinomial",
                                [ograds[1], node.inputs[0], entry(node, 0)]))]


def _backward_shape(params, in_shapes):
    return list(in_shapes), [in_shapes[1]]


def _backward_type(params, in_types):
    return list(in_types), [in_types[1]]


register(OpDef("_sample_multinomial", forward, params=PARAMS, infer_shape=_shape, infer_type=_type,
               outputs=lambda p: ["output0", "output1"] if p["get_prob"] else ["output"],
               resources=("random",), gradient=gradient, aliases=("sample_multinomial",),
               doc=__doc__))
register(OpDef("_backward_sample_multinomial", backward, arguments=("ograd", "data", "samples"),
               params=PARAMS, infer_shape=_backward_shape, infer_type=_backward_type))
