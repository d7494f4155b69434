"""SVMOutput: identity forward, hinge-loss gradient backward (a loss layer, like SoftmaxOutput).

Math, ``x`` the ``(N, K)`` scores (more axes are flattened), ``k = label[n]``, ``m = margin``,
``c = regularization_coefficient``. The implied loss per row is
``sum_j max(0, m - s_j x_j)^p`` with ``s_k = +1`` for the label and ``s_j = -1`` elsewhere::

    out = x
    L1-SVM (use_linear):  dx_k = -c [m > x_k]              dx_j = c [m > -x_j]          (j != k)
    L2-SVM (default):     dx_k = -2c max(0, m - x_k)       dx_j = 2c max(0, m + x_j)

The head gradient is not used (a loss layer) and the label gets no gradient.
``_backward_SVMOutput`` takes ``(output, label)`` and may overwrite the output.
"""
from __future__ import annotations

import numpy as np

from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape

PARAMS = {
    "margin": Param("float", 1.0, doc="The loss function penalizes outputs that lie outside this margin."),
    "regularization_coefficient": Param("float", 1.0, doc="Regularization parameter for the SVM."),
    "use_linear": Param("bool", False, doc="Whether to use L1-SVM objective (default L2-SVM)."),
}


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), [None]
    return [d, merge_shape("SVMOutput", "label", in_shapes[1], tuple(d[:-1]))], [d]


def infer_type(p, in_types):
    dt = in_types[0]
    return [dt, in_types[1] if in_types[1] is not None else dt], [dt]


def forward(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], inputs[0])


def backward(octx, p, inputs, outputs, req):
    out, label = inputs
    x = out.reshape(out.shape[0], -1)
    hit = np.arange(x.shape[1])[None, :] == label.reshape(-1).astype(np.int64)[:, None]
    m, c = np.asarray(p["margin"], x.dtype), np.asarray(p["regularization_coefficient"], x.dtype)
    signed = np.where(hit, x, -x)                  # s_j x_j
    if p["use_linear"]:
        g = (m > signed).astype(x.dtype) * c
    else:
        g = 2 * c * np.maximum(m - signed, 0)
    assign(outputs[0], req[0], np.where(hit, -g, g).reshape(out.shape))


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_SVMOutput", [entry(node), node.inputs[1]])), None]


register(OpDef("SVMOutput", forward, arguments=["data", "label"], params=PARAMS, infer_shape=infer_shape,
               infer_type=infer_type, gradient=gradient, inplace=[(0, 0)], loss_layer=True, doc=__doc__))
register(OpDef("_backward_SVMOutput", backward, arguments=["output", "label"], params=PARAMS,
               infer_shape=lambda p, s: (list(s), [s[0]]), infer_type=lambda p, t: (list(t), [t[0]]),
               inplace=[(0, 0)]))
