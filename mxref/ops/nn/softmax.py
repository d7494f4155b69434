"""softmax, log_softmax and softmin along ``axis``, with an optional ``temperature`` and output ``dtype``.

Math (``T`` is the temperature, default 1)::

    softmax      y = exp(x/T - max) / sum exp(x/T - max)     dx = y (g - sum(g y)) / T
    log_softmax  y = x/T - max - log sum exp(x/T - max)      dx = (g - exp(y) sum(g)) / T
    softmin      y = softmax(-x)                             dx = -y (g - sum(g y)) / T

With ``use_length=True`` softmax (only) takes a second input ``length`` (the data's shape without
``axis``, integers) and keeps only the first ``length`` entries along ``axis``: the rest are left
out of the sums and their outputs and gradients are 0; ``length`` has zero gradient.

Backward dependencies: ``_backward_softmax`` / ``_backward_log_softmax`` take ``(ograd, output)``
(plus ``length`` with ``use_length``, and ``data`` when ``dtype`` changes the output type, to
learn the gradient's dtype).

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
    "use_length": Param("bool", False, doc="Whether to use the length input as a mask."),
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


def _length_mask(x: np.ndarray, length: np.ndarray, axis: int) -> np.ndarray:
    """True where the position along ``axis`` is below that row's ``length``."""
    axis %= x.ndim
    pos = np.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - 1 - axis))
    return pos < np.expand_dims(length, axis).astype(np.int64)


def _make_forward(log, negate=False):
    def forward(octx, p, inputs, outputs, req):
        x = -inputs[0] if negate else inputs[0]
        out = outputs[0] if req[0] in ("write", "inplace") else np.empty(x.shape, outputs[0].dtype)
        if p["use_length"]:
            mask = _length_mask(x, inputs[1], p["axis"])
            with np.errstate(invalid="ignore"):       # a row of length 0 is all -inf (set to 0 below)
                softmax_into(np.where(mask, x, -np.inf), p["axis"], out, log, p["temperature"])
            out[~np.broadcast_to(mask, x.shape)] = 0
        else:
            softmax_into(x, p["axis"], out, log, p["temperature"])
        if req[0] == "add":
            outputs[0] += out
    return forward


def _make_backward(log, negate=False):
    def backward(octx, p, inputs, outputs, req):
        g, y = inputs[0], inputs[1]
        ax = p["axis"]
        mask = _length_mask(y, inputs[2], ax) if p["use_length"] else None
        if mask is not None:
            g = np.where(mask, g, 0)
        dx = g - np.exp(y) * g.sum(axis=ax, keepdims=True) if log else y * (
            g - (g * y).sum(axis=ax, keepdims=True))
        if mask is not None:
            dx = np.where(mask, dx, 0)
        t = p["temperature"]
        if negate:
            dx = -dx
        assign(outputs[0], req[0], dx / t if t not in (None, 1.0) else dx)
        if p["use_length"]:
            assign(outputs[1], req[1], 0)
    return backward


def _make_gradient(name):
    def gradient(node, ograds):
        ins = [ograds[0], entry(node)]
        if node.params["use_length"]:
            ins.append(node.inputs[1])
        if node.params["dtype"] is not None:
            ins.append(node.inputs[0])
        bwd = backward_node(node, "_backward_" + name, ins)
        return [entry(bwd, i) for i in range(len(node.inputs))]
    return gradient


def _arguments(p):
    return ["data", "length"] if p["use_length"] else ["data"]


def _backward_arguments(p):
    return ["ograd", "output"] + (["length"] if p["use_length"] else []) + (["data"] if p["dtype"] else [])


def _forward_shape(p, in_shapes):
    if not p["use_length"]:
        return elemwise_shape(p, in_shapes)
    d, n = in_shapes
    if d is None:
        return list(in_shapes), [None]
    ax = p["axis"] % len(d)
    want = tuple(d[:ax]) + tuple(d[ax + 1:])
    if n is not None and tuple(n) != want:
        raise MXNetError(f"softmax: length has shape {tuple(n)}, expected {want} (data {tuple(d)} "
                         f"without axis {p['axis']})")
    return [d, want], [d]


def _forward_type(p, in_types):
    return list(in_types), [p["dtype"] or in_types[0]]


def _backward_type(p, in_types):
    dt = in_types[-1] if p["dtype"] else in_types[0]
    return list(in_types), [dt] + ([in_types[2]] if p["use_length"] else [])


def _backward_shape(p, in_shapes):
    ins, outs = elemwise_shape(p, in_shapes[:2])
    return ins + list(in_shapes[2:]), outs + ([in_shapes[2]] if p["use_length"] else [])


def _length_only_for_softmax(name):
    def validate(p):
        # MXNet lists no length input for these two, so use_length cannot be honoured
        if name != "softmax" and p["use_length"]:
            raise MXNetError(f"{name}: use_length=True needs a length input, which only softmax takes")
    return validate


for _name, _log, _neg in (("softmax", False, False), ("log_softmax", True, False), ("softmin", False, True)):
    register(OpDef(_name, _make_forward(_log, _neg), arguments=_arguments, params=PARAMS,
                   infer_shape=_forward_shape, infer_type=_forward_type,
                   gradient=_make_gradient(_name), validate=_length_only_for_softmax(_name),
                   doc=__doc__))
    register(OpDef("_backward_" + _name, _make_backward(_log, _neg), arguments=_backward_arguments,
                   outputs=lambda p: ["data_grad"] + (["length_grad"] if p["use_length"] else []),
                   params=PARAMS, infer_shape=_backward_shape, infer_type=_backward_type))
