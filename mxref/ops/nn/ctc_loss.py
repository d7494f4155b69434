"""CTCLoss (aliases ``ctc_loss``, ``contrib.CTCLoss``, ``contrib.ctc_loss``): connectionist temporal
classification, one negative log-likelihood per sequence (Graves et al., 2006).

``data`` ``(T, N, A)`` holds unnormalised activations; ``p = softmax(data)`` over the alphabet, whose
blank is channel 0 (``blank_label='first'``; labels pad with 0) or ``A - 1`` (``'last'``; labels pad
with -1). ``label`` ``(N, L)`` ends at its first padding value unless ``label_lengths`` is given;
``data_lengths`` cuts each sequence's time. With ``l'`` the label with blanks around and between its
symbols (``S = 2 L + 1``), the forward-backward recursions in log space are::

    alpha[t, s] = log p[t, l'_s] + logsumexp(alpha[t-1, s], alpha[t-1, s-1], alpha[t-1, s-2] if skip(s))
    beta[t, s]  = log p[t, l'_s] + logsumexp(beta[t+1, s], beta[t+1, s+1], beta[t+1, s+2] if skip(s+2))
    skip(s): l'_s is not blank and l'_s != l'_{s-2}
    loss = -log P = -logsumexp(alpha[T-1, S-1], alpha[T-1, S-2])
    ddata[t, k] = p[t, k] - 1/P sum_{s: l'_s = k} exp(alpha[t, s] + beta[t, s] - log p[t, k])

(zero for ``t`` past a sequence's length). A label that cannot fit its sequence (``L`` plus its
repeated neighbours exceeds the length) has loss 0 and gradient 0, as MXNet's warp-ctc returns.
Like MXNet, the forward computes the gradient (``_ctc.ctc``) into a hidden second output;
``_backward_CTCLoss`` takes ``(ograd, grad)`` and scales it by the per-sequence head gradient.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._ctc import ctc
from ._util import backward_node, entry, merge_shape

PARAMS = {
    "use_data_lengths": Param("bool", False, doc="Whether the data lengths are decided by `data_lengths`."),
    "use_label_lengths": Param("bool", False, doc="Whether `label_lengths` gives the label lengths."),
    "blank_label": Param("str", "first", choices=("first", "last"), doc="The label reserved for blank."),
}


def _arguments(p):
    return (["data", "label"] + (["data_lengths"] if p["use_data_lengths"] else [])
            + (["label_lengths"] if p["use_label_lengths"] else []))


def infer_shape(p, in_shapes):
    d, lab = in_shapes[0], in_shapes[1]
    if d is not None and len(d) != 3:
        raise MXNetError(f"CTCLoss: 'data' must be 3-D (sequence, batch, alphabet), got shape {tuple(d)}")
    if lab is not None and len(lab) != 2:
        raise MXNetError(f"CTCLoss: 'label' must be 2-D (batch, label length), got shape {tuple(lab)}")
    if d is None or lab is None:
        return list(in_shapes), [None if d is None else (d[1],), d]
    if lab[0] != d[1] or lab[1] > d[0]:
        raise MXNetError(f"CTCLoss: label shape {tuple(lab)} does not fit data shape {tuple(d)} (batch sizes "
                         "must agree and the labels cannot be longer than the sequences)")
    ins = [d, lab] + [merge_shape("CTCLoss", n, s, (d[1],)) for n, s in zip(_arguments(p)[2:], in_shapes[2:])]
    return ins, [(d[1],), d]


def infer_type(p, in_types):
    dt = in_types[0]
    return [dt] + [t if t is not None else dt for t in in_types[1:]], [dt, dt]


def _lengths(p, inputs, T, A):
    """Per-sequence data lengths, label lengths and labels ``(N, L)`` as int64, and the blank."""
    label = np.asarray(inputs[1]).astype(np.int64)
    N, L = label.shape
    extra = list(inputs[2:])
    tlen = extra.pop(0).reshape(N).astype(np.int64) if p["use_data_lengths"] else np.full(N, T, np.int64)
    if p["use_label_lengths"]:
        llen = extra.pop(0).reshape(N).astype(np.int64)
    else:
        pad = label == (0 if p["blank_label"] == "first" else -1)
        llen = np.where(pad.any(axis=1), pad.argmax(axis=1), L)
    return tlen, llen, label, 0 if p["blank_label"] == "first" else A - 1


def forward(octx, p, inputs, outputs, req):
    data = inputs[0]
    loss, grad = ctc(data, *_lengths(p, inputs, data.shape[0], data.shape[2]))
    assign(outputs[0], req[0], loss.astype(data.dtype))
    assign(outputs[1], req[1], grad.astype(data.dtype))


def backward(octx, p, inputs, outputs, req):
    og, grad = inputs
    assign(outputs[0], req[0], grad * og.reshape(1, -1, 1))


def gradient(node, ograds):
    n = backward_node(node, "_backward_CTCLoss", [ograds[0], entry(node, 1)])
    return [entry(n)] + [None] * (len(node.inputs) - 1)


register(OpDef("CTCLoss", forward, arguments=_arguments, outputs=["output0", "output1"],
               num_visible_outputs=1, params=PARAMS, infer_shape=infer_shape, infer_type=infer_type,
               gradient=gradient,
               aliases=["ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"], doc=__doc__))
register(OpDef("_backward_CTCLoss", backward, arguments=["ograd", "grad"], params=PARAMS,
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=lambda p, t: (list(t), [t[1]])))
