"""softmax_cross_entropy: the summed cross entropy of a softmax over classes and integer labels.

Math (``data`` is ``(N, C)``, ``label`` ``(N,)`` class indices in the data's dtype)::

    p = softmax(data) per row
    out = sum_i -log(max(p[i, label_i], 1e-8))        (shape ``(1,)``)
    d data = g * (p - onehot(label))                   (the label gets no gradient)

The ``1e-8`` floor is MXNet's, so a hopeless row costs at most ``-log(1e-8)``. Backward
dependencies: ``_backward_softmax_cross_entropy`` takes ``(ograd, data, label)`` and recomputes
``p``. Kernels: numpy only (the reference).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, assign, register
from ._util import backward_node, entry, merge_shape, uniform_type
from .softmax import softmax_into


def _softmax_rows(data: np.ndarray, label: np.ndarray):
    idx = label.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= data.shape[1]):
        raise MXNetError(f"softmax_cross_entropy: label values must be in [0, {data.shape[1]}), "
                         f"got [{idx.min()}, {idx.max()}]")
    p = np.empty(data.shape, data.dtype)
    softmax_into(data, 1, p)
    return p, idx


def forward(octx, params, inputs, outputs, req):
    p, idx = _softmax_rows(inputs[0], inputs[1])
    picked = np.maximum(p[np.arange(p.shape[0]), idx], p.dtype.type(1e-8))
    assign(outputs[0], req[0], np.reshape(-np.log(picked).sum(), (1,)))


def backward(octx, params, inputs, outputs, req):
    g, data, label = inputs
    p, idx = _softmax_rows(data, label)
    p[np.arange(p.shape[0]), idx] -= 1
    assign(outputs[0], req[0], g[0] * p)


def infer_shape(params, in_shapes):
    data, label = in_shapes
    if data is not None and len(data) != 2:
        raise MXNetError(f"softmax_cross_entropy: data must be 2-D (batch, classes), got {tuple(data)}")
    if label is not None and len(label) != 1:
        raise MXNetError(f"softmax_cross_entropy: label must be 1-D (batch,), got {tuple(label)}")
    if data is not None:
        label = merge_shape("softmax_cross_entropy", "label", label, (data[0],))
    return [data, label], [(1,)]


def gradient(node, ograds):
    bwd = backward_node(node, "_backward_softmax_cross_entropy", [ograds[0], *node.inputs])
    return [entry(bwd), None]


register(OpDef("softmax_cross_entropy", forward, arguments=["data", "label"], infer_shape=infer_shape,
               infer_type=uniform_type(), gradient=gradient, doc=__doc__))
register(OpDef("_backward_softmax_cross_entropy", backward, arguments=["ograd", "data", "label"],
               infer_shape=lambda p, s: (list(s), [s[1]]),
               infer_type=lambda p, t: (list(t), [t[1]])))
