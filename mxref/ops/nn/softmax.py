"""softmax, log_softmax and softmin along ``axis``, with an optional ``temperature`` and output ``dtype``.

Math (``T`` is the temperature, default 1)::

    softmax      y = exp(x/T - max) / sum exp(x/T - max)     dx = y (g - sum(g y)) / T
    log_softmax  y = x/T - max - log sum exp(x/T - max)      dx = (g - exp(y) sum(g)) / T
    softmin      y = softmax(-x)                             dx = -y (g - sum(g y)) / T

Backward dependencies: ``_backward_softmax`` / ``_backward_log_softmax`` take ``(ograd, output)``
(plus ``data`` when ``dtype`` changes the output type, to learn the gradient's dtype).

Kernels: numpy only (the reference; ``softmax_into`` is also the loss operators' softmax). No
second derivative (the backward ops have no gradient).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, elemwise_shape, register
from ._util import backward_node, entry

PARAMS = {
    "axis": Param("int", -1, doc="The axis along which to compute softmax."),
    "temperature": Param("float_or_none", None, doc="Temperature parameter in softmax."),
    "dtype": Param("dtype", None, doc="Output dtype; defaults to the input's."),
    "use_length": Param("bool", False, doc="Whether to use the length input as a mask (unsupported)."),
}


def softmax_into(x: np.ndarray, axis: int, out: np.ndarray, log: bool = False, temperature=None):
    """Numerically stable (log-)softmax of ``x`` along ``axis`` written into ``out``."""
    np.subtract(x, x.max(axis=axis, keepdims=True), out=out, casting="unsafe")
    if temperature is not None and temperature != 1.0:
        out /= temperature
    if log:
        out -= np.log(np.exp(out).sum(axis=axis, keepdims=True))
    else:
        np.exp(out, out=out)
        out /= out.sum(axis=axis, keepdims=True)


def _validate(p):
    if p["use_length"]:
        raise MXNetError("softmax: use_length=True is not supported by mxref")


def _make_forward(log, negate=False):
    def forward(octx, p, inputs, outputs, req):
        x = -inputs[0] if negate else inputs[0]
        out = outputs[0] if req[0] in ("write", "inplace") else np.empty(x.shape, outputs[0].dtype)
        softmax_into(x, p["axis"], out, log, p["temperature"])
        if req[0] == "add":
            outputs[0] += out
    return forward


def _make_backward(log, negate=False):
    def backward(octx, p, inputs, outputs, req):
        g, y = inputs[0], inputs[1]
        ax = p["axis"]
        dx = g - np.exp(y) * g.sum(axis=ax, keepdims=True) if log else y * (
            g - (g * y).sum(axis=ax, keepdims=True))
        t = p["temperature"]
        if negate:
            dx = -dx
        assign(outputs[0], req[0], dx / t if t not in (None, 1.0) else dx)
    return backward


def _make_gradient(name):
    def gradient(node, ograds):
        ins = [ograds[0], entry(node)]
        if node.params["dtype"] is not None:
            ins.append(node.inputs[0])
        return [entry(backward_node(node, "_backward_" + name, ins))]
    return gradient


def _forward_type(p, in_types):
    return list(in_types), [p["dtype"] or in_types[0]]


def _backward_type(p, in_types):
    dt = in_types[2] if len(in_types) > 2 else in_types[0]
    return list(in_types), [dt]


def _backward_shape(p, in_shapes):
    ins, outs = elemwise_shape(p, in_shapes[:2])
    return ins + list(in_shapes[2:]), outs


for _name, _log, _neg in (("softmax", False, False), ("log_softmax", True, False), ("softmin", False, True)):
    register(OpDef(_name, _make_forward(_log, _neg), params=PARAMS, infer_type=_forward_type,
                   gradient=_make_gradient(_name), validate=_validate, doc=__doc__))
    register(OpDef("_backward_" + _name, _make_backward(_log, _neg),
                   arguments=lambda p: ["ograd", "output"] + (["data"] if p["dtype"] else []),
                   params=PARAMS, infer_shape=_backward_shape, infer_type=_backward_type))
