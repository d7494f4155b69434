"""SoftmaxOutput (alias ``Softmax``): softmax forward, cross-entropy gradient backward (a loss layer).

Math, with ``p = softmax(data)`` over the class axis and ``t`` the target (one-hot of ``label``,
smoothed by ``smooth_alpha``: ``1 - a`` on the label, ``a / (k - 1)`` elsewhere)::

    out   = p
    ddata = grad_scale * (p - t) / valid_cnt         (times ograd only when out_grad=True)

``valid_cnt`` is 1 (``normalization='null'``), the batch size (``'batch'``) or the number of labels
not equal to ``ignore_label`` (``'valid'``, at least 1); with ``multi_output`` (softmax over axis 1)
MXNet also divides by the spatial size except under ``'valid'``. Rows whose label is
``ignore_label`` get zero gradient when ``use_ignore``. A label shaped like ``data`` is used as
probabilities directly. The label gets no gradient (``None``: the gradient pass writes zeros).

NOTE: with ``out_grad=True`` MXNet 1.9.1 multiplies the gradient by the *output* instead of the head
gradient (a defect); mxref multiplies by the head gradient, as the parameter documents.

Backward dependencies: ``_backward_SoftmaxOutput`` takes ``(output, label)`` (plus ``ograd`` with
``out_grad``); the data gradient may overwrite the output.
"""
from __future__ import annotations

import numpy as np

from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape, uniform_type
from .softmax import softmax_into

PARAMS = {
    "grad_scale": Param("float", 1.0, doc="Scales the gradient by a float factor."),
    "ignore_label": Param("float", -1.0, doc="Label value ignored in backward when use_ignore."),
    "multi_output": Param("bool", False, doc="Softmax along axis 1 of an (n, k, ...) input."),
    "use_ignore": Param("bool", False, doc="Whether ignore_label contributes no gradient."),
    "preserve_shape": Param("bool", False, doc="Softmax along the last axis."),
    "normalization": Param("str", "null", choices=("null", "batch", "valid"),
                           doc="Normalizes the gradient."),
    "out_grad": Param("bool", False, doc="Multiplies the gradient with the output gradient."),
    "smooth_alpha": Param("float", 0.0, doc="Label smoothing: spread this much mass over other classes."),
}


def _label_shapes(p, d):
    if p["multi_output"]:
        size = int(np.prod(d))
        return [(d[0], size // d[0] // d[1]), (d[0],) + tuple(d[2:]), (d[0], 1) + tuple(d[2:])]
    return [tuple(d[:-1])]


def infer_shape(p, in_shapes):
    d, lab = in_shapes
    if d is None:
        return list(in_shapes), [None]
    if lab != d:
        options = _label_shapes(p, d)
        lab = options[0] if lab is None or lab not in options else lab
        lab = merge_shape("SoftmaxOutput", "label", in_shapes[1], lab)
    return [d, lab], [d]


def _class_view(p, x):
    """``x`` as (rows, k, spatial) with the class axis in the middle."""
    if p["multi_output"]:
        return x.reshape(x.shape[0], x.shape[1], -1)
    if p["preserve_shape"]:
        return x.reshape(-1, x.shape[-1], 1)
    return x.reshape(x.shape[0], -1, 1)


def forward(octx, p, inputs, outputs, req):
    x = _class_view(p, inputs[0])
    if req[0] == "add":
        out = np.empty_like(x)
        softmax_into(x, 1, out)
        outputs[0] += out.reshape(outputs[0].shape)
    elif req[0] != "null":
        softmax_into(x, 1, _class_view(p, outputs[0]))


def backward(octx, p, inputs, outputs, req):
    out, label = inputs[0], inputs[1]
    if label.shape == out.shape:  # probabilities as the label
        grad = (out - label) * p["grad_scale"]
    else:
        prob = _class_view(p, out)
        n, k, s = prob.shape
        lab = label.reshape(n, s).astype(np.int64)
        grad = prob.copy()
        alpha = p["smooth_alpha"]
        hit = (np.arange(k)[None, :, None] == lab[:, None, :])
        grad -= hit * (1.0 - alpha) + (~hit) * (alpha / (k - 1)) if alpha else hit
        keep = label.reshape(n, s) != p["ignore_label"]
        if p["use_ignore"]:
            grad *= keep[:, None, :]
        norm = p["normalization"]
        cnt = {"null": 1, "batch": n, "valid": max(int(keep.sum()), 1)}[norm]
        if p["multi_output"] and norm != "valid":
            cnt *= s
        grad *= p["grad_scale"] / cnt
        grad = grad.reshape(out.shape)
    if p["out_grad"]:
        grad *= inputs[2]
    assign(outputs[0], req[0], grad)


def gradient(node, ograds):
    ins = [entry(node), node.inputs[1]] + ([ograds[0]] if node.params["out_grad"] else [])
    return [entry(backward_node(node, "_backward_SoftmaxOutput", ins)), None]


register(OpDef("SoftmaxOutput", forward, arguments=["data", "label"], params=PARAMS,
               infer_shape=infer_shape, infer_type=uniform_type(1), gradient=gradient,
               inplace=[(0, 0)], loss_layer=True, aliases=["Softmax"], doc=__doc__))
register(OpDef("_backward_SoftmaxOutput", backward,
               arguments=lambda p: ["output", "label"] + (["ograd"] if p["out_grad"] else []),
               params=PARAMS, infer_shape=lambda p, s: (list(s), [s[0]]),
               infer_type=lambda p, t: (list(t), [t[0]]), inplace=[(0, 0)]))
