"""LinearRegressionOutput, LogisticRegressionOutput, MAERegressionOutput: loss layers for regression.

Math (``K`` = outputs per sample = label.size / batch; the label gets no gradient)::

    Linear    out = x           dx = grad_scale / K * (out - label)
    Logistic  out = sigmoid(x)  dx = grad_scale / K * (out - label)
    MAE       out = x           dx = grad_scale / K * sign(out - label)

The label is shaped like ``data``, or ``(N,)`` when ``data`` is ``(N, 1)``. Backward dependencies:
``_backward_<Op>`` takes ``(output, label)`` and gives ``(data_grad, label_grad)`` (zero), as
MXNet's node does; the gradient may overwrite the output.
"""
from __future__ import annotations

import numpy as np

from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape, uniform_type

PARAMS = {"grad_scale": Param("float", 1.0, doc="Scale the gradient by a float factor.")}

_FORWARD = {
    "LinearRegressionOutput": lambda x: x,
    "LogisticRegressionOutput": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "MAERegressionOutput": lambda x: x,
}
_GRAD = {
    "LinearRegressionOutput": lambda d: d,
    "LogisticRegressionOutput": lambda d: d,
    "MAERegressionOutput": np.sign,
}


def infer_shape(p, in_shapes):
    d, lab = in_shapes
    if d is None:
        return list(in_shapes), [None]
    want = (d[0],) if len(d) == 2 and d[1] == 1 and (lab is None or len(lab) == 1) else d
    return [d, merge_shape("RegressionOutput", "label", lab, want)], [d]


def _make(name):
    def forward(octx, p, inputs, outputs, req):
        assign(outputs[0], req[0], _FORWARD[name](inputs[0]).astype(inputs[0].dtype, copy=False))

    def backward(octx, p, inputs, outputs, req):
        out, label = inputs
        k = label.size // label.shape[0] if label.ndim else 1
        diff = out - label.reshape(out.shape)
        assign(outputs[0], req[0], _GRAD[name](diff) * np.asarray(p["grad_scale"] / k, out.dtype))
        assign(outputs[1], req[1], np.zeros_like(outputs[1]))

    def gradient(node, ograds):
        return [entry(backward_node(node, "_backward_" + name, [entry(node), node.inputs[1]])), None]

    register(OpDef(name, forward, arguments=["data", "label"], params=PARAMS, infer_shape=infer_shape,
                   infer_type=uniform_type(1), gradient=gradient, inplace=[(0, 0)], loss_layer=True,
                   doc=__doc__))
    # Two outputs as in MXNet (data and label gradients; a monitor shows both); the label's is zero.
    register(OpDef("_backward_" + name, backward, arguments=["output", "label"], params=PARAMS,
                   outputs=["data_grad", "label_grad"], infer_shape=lambda p, s: (list(s), list(s)),
                   infer_type=lambda p, t: (list(t), list(t)), inplace=[(0, 0)]))


for _name in _FORWARD:
    _make(_name)
