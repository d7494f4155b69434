"""SoftmaxActivation (deprecated in MXNet for ``softmax``): softmax per instance or across channels.

Math: ``mode='instance'`` takes the softmax over the last axis (MXNet flattens the input to
``(-1, shape[-1])``; for 2-D input, each row); ``mode='channel'`` over axis 1 at each position
(``ndim >= 3``)::

    y = exp(x - max x) / sum exp(x - max x)       dx = y * (g - sum(g * y))

``_backward_SoftmaxActivation`` takes ``(ograd, output)``, so the input may be overwritten.

NOTE: for ``mode='instance'`` on input of more than 2 dimensions MXNet 1.9.1's backward sums over
axis 1 while its forward normalised the last axis (a defect); mxref differentiates the forward it
computes, so the two agree only for 2-D input.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, elemwise_shape, elemwise_type, register
from ._util import backward_node, entry
from .softmax import softmax_into

PARAMS = {"mode": Param("str", "instance", choices=("channel", "instance"),
                        doc="Softmax for each instance, or across channels at each position.")}


def _view(p, x):
    """``x`` as ``(N, classes, positions)``."""
    if p["mode"] == "channel":
        if x.ndim < 3:
            raise MXNetError(f"SoftmaxActivation: mode 'channel' needs at least 3 dimensions, "
                             f"got data shape {x.shape}")
        return x.reshape(x.shape[0], x.shape[1], -1)
    return x.reshape(-1, x.shape[-1], 1)


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is not None and p["mode"] == "channel" and len(d) < 3:
        raise MXNetError(f"SoftmaxActivation: mode 'channel' needs at least 3 dimensions, got data "
                         f"shape {tuple(d)}")
    return elemwise_shape(p, in_shapes)


def forward(octx, p, inputs, outputs, req):
    y = np.empty(_view(p, inputs[0]).shape, inputs[0].dtype)
    softmax_into(_view(p, inputs[0]), 1, y)
    assign(outputs[0], req[0], y.reshape(outputs[0].shape))


def backward(octx, p, inputs, outputs, req):
    g, y = _view(p, inputs[0]), _view(p, inputs[1])
    assign(outputs[0], req[0], (y * (g - (g * y).sum(axis=1, keepdims=True))).reshape(outputs[0].shape))


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_SoftmaxActivation", [ograds[0], entry(node)]))]


SOFTMAX_ACTIVATION = register(OpDef("SoftmaxActivation", forward, params=PARAMS, infer_shape=infer_shape,
                                    gradient=gradient, inplace=[(0, 0)], doc=__doc__))
SOFTMAX_ACTIVATION.monitor_input_names = False    # no FListInputNames in MXNet: "input0" (Activation's note)
register(OpDef("_backward_SoftmaxActivation", backward, arguments=["ograd", "output"], params=PARAMS,
               infer_shape=elemwise_shape, infer_type=elemwise_type, inplace=[(0, 0)]))
