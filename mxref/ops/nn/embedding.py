"""Embedding: look up rows of ``weight`` by integer index; out shape is ``data.shape + (output_dim,)``.

Math::

    out[..., :] = weight[clip(data[...], 0, input_dim - 1), :]
    dweight[i]  = sum over positions p with data[p] == i of dout[p]      (scatter-add)

The indices get no gradient (``None``). Backward dependencies: ``_backward_Embedding`` takes
``(ograd, data)``; the weight itself is not needed.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape

PARAMS = {
    "input_dim": Param("int", doc="Vocabulary size of the input indices."),
    "output_dim": Param("int", doc="Dimension of the embedding vectors."),
    "dtype": Param("dtype", np.dtype(np.float32), doc="Data type of weight."),
    "sparse_grad": Param("bool", False, doc="Row-sparse gradient (mxref computes a dense one)."),
}


def _validate(p):
    if p["input_dim"] <= 0 or p["output_dim"] <= 0:
        raise MXNetError("Embedding: input_dim and output_dim must be positive")


def infer_shape(p, in_shapes):
    d, w = in_shapes
    w = merge_shape("Embedding", "weight", w, (p["input_dim"], p["output_dim"]))
    return [d, w], [None if d is None else tuple(d) + (p["output_dim"],)]


def infer_type(p, in_types):
    wt = in_types[1] or p["dtype"]
    return [in_types[0] or wt, wt], [wt]


def _indices(p, data):
    return np.clip(data.astype(np.int64), 0, p["input_dim"] - 1)


def forward(octx, p, inputs, outputs, req):
    idx = _indices(p, inputs[0])
    if req[0] == "write" or req[0] == "inplace":
        np.take(inputs[1], idx, axis=0, out=outputs[0])
    else:
        assign(outputs[0], req[0], inputs[1][idx])


def backward(octx, p, inputs, outputs, req):
    og, idx = inputs[0], _indices(p, inputs[1]).reshape(-1)
    dw = np.zeros(outputs[0].shape, dtype=og.dtype)
    np.add.at(dw, idx, og.reshape(idx.size, -1))
    assign(outputs[0], req[0], dw)


def gradient(node, ograds):
    return [None, entry(backward_node(node, "_backward_Embedding", [ograds[0], node.inputs[0]]))]


register(OpDef("Embedding", forward, arguments=["data", "weight"], params=PARAMS, infer_shape=infer_shape,
               infer_type=infer_type, gradient=gradient, validate=_validate, doc=__doc__))
register(OpDef("_backward_Embedding", backward, arguments=["ograd", "data"], outputs=["weight"],
               params=PARAMS, infer_shape=lambda p, s: (list(s), [(p["input_dim"], p["output_dim"])]),
               infer_type=lambda p, t: (list(t), [t[0]])))
