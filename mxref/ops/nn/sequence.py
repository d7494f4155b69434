"""SequenceMask, SequenceLast, SequenceReverse: variable-length sequences along a time axis.

``data`` is ``(T, B, ...)`` (``axis=0``) or ``(B, T, ...)`` (``axis=1``); ``sequence_length`` (an
extra input only when ``use_sequence_length``) holds ``L_b`` per batch entry, else every
``L_b = T``. Math, ``t`` the time index::

    SequenceMask     out[t, b] = data[t, b] if t < L_b else value      d/ddata: ograd masked alike
    SequenceLast     out[b]    = data[L_b - 1, b]                     d/ddata: ograd scattered back
    SequenceReverse  out[t, b] = data[L_b - 1 - t, b] if t < L_b else data[t, b]   (axis 0 only)
                                                                      d/ddata: SequenceReverse(ograd)

The lengths get no gradient. SequenceMask's and SequenceReverse's gradients are the same operators
on the head gradient (value 0 for the mask); SequenceLast's is ``_backward_SequenceLast``, which
reads ``data`` only for its shape.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ...graph import make_node
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape

PARAMS = {
    "use_sequence_length": Param("bool", False, doc="Take the lengths from the extra input "
                                 "`sequence_length`."),
    "axis": Param("int", 0, doc="The sequence axis: 0 or 1."),
}
MASK_PARAMS = dict(PARAMS, value=Param("float", 0.0, doc="The value to be used as a mask."))


def _arguments(p):
    return ["data", "sequence_length"] if p["use_sequence_length"] else ["data"]


def _shape_rule(op, drop_axis):
    def infer_shape(p, in_shapes):
        d = in_shapes[0]
        if p["axis"] not in (0, 1) or (op == "SequenceReverse" and p["axis"] != 0):
            raise MXNetError(f"{op}: axis must be {'0' if op == 'SequenceReverse' else '0 or 1'}, "
                             f"got {p['axis']}")
        if d is None:
            return list(in_shapes), [None]
        if len(d) < 2:
            raise MXNetError(f"{op}: 'data' must have at least 2 dimensions, got shape {tuple(d)}")
        ins = [d]
        if p["use_sequence_length"]:
            ins.append(merge_shape(op, "sequence_length", in_shapes[1], (d[1 - p["axis"]],)))
        out = d[:p["axis"]] + d[p["axis"] + 1:] if drop_axis else d
        return ins, [out]
    return infer_shape


def _type_rule(p, in_types):
    dt = in_types[0]
    ins = [dt] + [t if t is not None else dt for t in in_types[1:]]
    return ins, [dt]


def _lengths(p, inputs, T, B):
    """Per-batch lengths as int64 (all T without use_sequence_length)."""
    if not p["use_sequence_length"]:
        return np.full(B, T, dtype=np.int64)
    return np.asarray(inputs[1]).reshape(B).astype(np.int64)


def _time_major(p, x):
    return x if p["axis"] == 0 else np.swapaxes(x, 0, 1)


def mask_forward(octx, p, inputs, outputs, req):
    x = _time_major(p, inputs[0])
    T, B = x.shape[:2]
    keep = np.arange(T)[:, None] < _lengths(p, inputs, T, B)[None, :]
    keep = keep.reshape(keep.shape + (1,) * (x.ndim - 2))
    out = np.where(keep, x, np.asarray(p["value"], x.dtype))
    assign(outputs[0], req[0], _time_major(p, out))


def mask_gradient(node, ograds):
    params = dict(node.params, value=0.0)
    n = make_node("SequenceMask", [ograds[0]] + list(node.inputs[1:]), node.name + "_backward",
                  params=params)
    return [entry(n)] + [None] * (len(node.inputs) - 1)


def last_forward(octx, p, inputs, outputs, req):
    x = _time_major(p, inputs[0])
    T, B = x.shape[:2]
    assign(outputs[0], req[0], x[_lengths(p, inputs, T, B) - 1, np.arange(B)])


def last_backward(octx, p, inputs, outputs, req):
    og, data = inputs[0], inputs[1]
    grad = np.zeros(data.shape, og.dtype)
    g = _time_major(p, grad)
    T, B = g.shape[:2]
    g[_lengths(p, [None] + list(inputs[2:]), T, B) - 1, np.arange(B)] = og
    assign(outputs[0], req[0], grad)


def last_gradient(node, ograds):
    n = backward_node(node, "_backward_SequenceLast", [ograds[0], node.inputs[0]] + list(node.inputs[1:]))
    return [entry(n)] + [None] * (len(node.inputs) - 1)


def reverse_forward(octx, p, inputs, outputs, req):
    x = inputs[0]
    T, B = x.shape[:2]
    lens = _lengths(p, inputs, T, B)
    t = np.arange(T)[:, None]
    src = np.where(t < lens[None, :], lens[None, :] - 1 - t, t)       # (T, B) source time index
    assign(outputs[0], req[0], x[src, np.arange(B)[None, :]])


def reverse_gradient(node, ograds):
    n = make_node("SequenceReverse", [ograds[0]] + list(node.inputs[1:]), node.name + "_backward",
                  params=node.params)
    return [entry(n)] + [None] * (len(node.inputs) - 1)


register(OpDef("SequenceMask", mask_forward, arguments=_arguments, params=MASK_PARAMS,
               infer_shape=_shape_rule("SequenceMask", False), infer_type=_type_rule,
               gradient=mask_gradient, inplace=[(0, 0)], doc=__doc__))
register(OpDef("SequenceLast", last_forward, arguments=_arguments, params=PARAMS,
               infer_shape=_shape_rule("SequenceLast", True), infer_type=_type_rule,
               gradient=last_gradient, doc=__doc__))
register(OpDef("_backward_SequenceLast", last_backward, params=PARAMS, ignore_inputs=[1],
               arguments=lambda p: ["ograd", "data"] + _arguments(p)[1:],
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=lambda p, t: (list(t), [t[0]])))
register(OpDef("SequenceReverse", reverse_forward, arguments=_arguments, params=PARAMS,
               infer_shape=_shape_rule("SequenceReverse", False), infer_type=_type_rule,
               gradient=reverse_gradient, doc=__doc__))
