"""``_contrib_MultiBoxDetection``: SSD predictions to detections — decode, threshold, sort, NMS.

Inputs ``cls_prob (B, K, A)`` (class 0 is background), ``loc_pred (B, 4A)``, ``anchor (1, A, 4)``.
Per anchor: ``id`` = the best non-background class (its probability ``score``), or background
when ``score < threshold``; the box is decoded from the anchor (centre ``a``, size ``s``)::

    x = p0 v0 sw + ax,  y = p1 v1 sh + ay,  w = exp(p2 v2) sw / 2,  h = exp(p3 v3) sh / 2
    box = [x - w, y - h, x + w, y + h]            (clipped to [0, 1] with clip=True)

Output ``(B, A, 6)`` rows ``[id - 1, score, xmin, ymin, xmax, ymax]``: the non-background rows
first (anchor order), then rows of -1. Unless ``nms_threshold`` is outside (0, 1], those rows
are sorted by score (stable); beyond ``nms_topk`` they keep their unsorted values but get id -1;
then greedy NMS sets id -1 on any later row with IoU >= nms_threshold against a kept row of the
same class (any class with ``force_suppress``). ``background_id`` is accepted and unused, as in
MXNet's CPU code. The gradient is zero.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..elemwise import zero_grads
from ..nn._util import uniform_type
from ..registry import OpDef, Param, assign, register

PARAMS = {
    "clip": Param("bool", True, doc="Clip out-of-boundary boxes."),
    "threshold": Param("float", 0.01, doc="Threshold to be a positive prediction."),
    "background_id": Param("int", 0, doc="Background id."),
    "nms_threshold": Param("float", 0.5, doc="Non-maximum suppression threshold."),
    "force_suppress": Param("bool", False, doc="Suppress all detections regardless of class_id."),
    "variances": Param("float_tuple", (0.1, 0.1, 0.2, 0.2), doc="Variances of the box regression output."),
    "nms_topk": Param("int", -1, doc="Keep maximum top k detections before nms, -1 for no limit."),
}


def infer_shape(p, in_shapes):
    c, loc, a = in_shapes
    if c is None or a is None:
        return list(in_shapes), [None]
    if len(c) != 3 or len(a) != 3 or a[2] != 4 or c[2] != a[1]:
        raise MXNetError(f"MultiBoxDetection: 'cls_prob' {tuple(c)} must be (batch, classes, A) and "
                         f"'anchor' {tuple(a)} (1, A, 4) with the same A")
    if loc is not None and (len(loc) != 2 or loc[1] != 4 * c[2]):
        raise MXNetError(f"MultiBoxDetection: 'loc_pred' must be (batch, {4 * c[2]}), got {tuple(loc)}")
    return [c, (c[0], 4 * c[2]), a], [(c[0], a[1], 6)]


def decode(anchor, pred, p):
    v = np.asarray(p["variances"], anchor.dtype)
    size = anchor[:, 2:] - anchor[:, :2]
    centre = (anchor[:, :2] + anchor[:, 2:]) / 2
    xy = pred[:, :2] * v[:2] * size + centre
    half = np.exp(pred[:, 2:] * v[2:]) * size / 2
    box = np.concatenate([xy - half, xy + half], axis=1)
    return np.clip(box, 0, 1) if p["clip"] else box


def _iou(a, b):
    """IoU of box ``a`` with rows ``b``; 0 where the union is not positive (MXNet's CalculateOverlap)."""
    wh = np.maximum(np.minimum(a[2:], b[:, 2:]) - np.maximum(a[:2], b[:, :2]), 0)
    inter = wh[:, 0] * wh[:, 1]
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) - inter
    return np.where(union <= 0, 0, inter / np.where(union <= 0, 1, union))


def detect(prob, pred, anchor, p):
    """``(A, 6)`` detections of one image; the module docstring is the spec."""
    na = anchor.shape[0]
    out = np.full((na, 6), -1, prob.dtype)
    # The best foreground class (the first on ties); a running max from -1, as MXNet, leaves
    # class 0 and score -1 when no probability exceeds -1 (or there is no foreground class).
    fg = np.concatenate([np.full((1, na), -1, prob.dtype), prob[1:]])
    cls, score = fg.argmax(axis=0), fg.max(axis=0)
    cls[score < p["threshold"]] = 0
    box = decode(anchor, pred.reshape(na, 4), p)
    rows = np.concatenate([(cls - 1)[:, None], score[:, None], box], axis=1)
    rows = rows[cls > 0]
    out[:len(rows)] = rows
    nt = p["nms_threshold"]
    if len(rows) == 0 or nt <= 0 or nt > 1:
        return out
    order = np.argsort(-rows[:, 1], kind="stable")
    keep = len(rows) if not 0 < p["nms_topk"] < len(rows) else p["nms_topk"]
    out[keep:len(rows), 0] = -1
    out[:keep] = rows[order[:keep]]
    for i in range(keep):
        if out[i, 0] < 0:
            continue
        later = np.arange(i + 1, keep)
        later = later[out[later, 0] >= 0]
        if not p["force_suppress"]:
            later = later[out[later, 0] == out[i, 0]]
        out[later[_iou(out[i, 2:], out[later, 2:]) >= nt], 0] = -1
    return out


def forward(octx, p, inputs, outputs, req):
    prob, loc, anchor = inputs
    anchor = anchor.reshape(-1, 4)
    dets = np.stack([detect(prob[b], loc[b], anchor, p) for b in range(prob.shape[0])])
    assign(outputs[0], req[0], dets)


def _validate(p):
    if len(p["variances"]) != 4:
        raise MXNetError(f"MultiBoxDetection: 'variances' needs 4 values, got {p['variances']}")


register(OpDef("_contrib_MultiBoxDetection", forward, arguments=("cls_prob", "loc_pred", "anchor"),
               params=PARAMS, infer_shape=infer_shape, infer_type=uniform_type(1), gradient=zero_grads,
               validate=_validate, doc=__doc__))
