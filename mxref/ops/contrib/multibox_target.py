"""``_contrib_MultiBoxTarget``: SSD training targets — match anchors to ground truth, encode offsets.

Inputs: ``anchor (1, A, 4)`` corners, ``label (B, L, >=5)`` rows ``[class, xmin, ymin, xmax, ymax]``
padded with -1 rows (the first row whose class is -1 ends the list), ``cls_pred (B, K, A)``.
Per batch, with ``iou (A, L)``:

1. Greedy: repeatedly take the best (anchor, gt) pair with IoU > 1e-6 among unmatched anchors and
   gts (first in anchor-major order on ties) and match it, until every gt is matched or none is left.
2. If ``overlap_threshold > 0``: every other anchor takes its best gt and is positive when that
   IoU > overlap_threshold.
3. Negatives: with ``negative_mining_ratio > 0``, the ``int(num_pos * ratio)`` (at most the rest)
   unmatched anchors whose best IoU < negative_mining_thresh and whose background softmax
   probability is lowest (stable order); otherwise every non-positive anchor.

Outputs: ``loc_target (B, 4A)`` = ``[(gx-ax)/aw/v0, (gy-ay)/ah/v1, log(gw/aw)/v2, log(gh/ah)/v3]``
for positives (centre/size form), ``loc_mask (B, 4A)`` = 1 for positives, ``cls_target (B, A)`` =
gt class + 1 for positives, 0 for negatives and ``ignore_label`` for the rest (and everywhere in
a batch without labels). ``minimum_negative_samples`` is accepted and unused, as in MXNet's CPU
code. The targets are constants for training: the gradient is zero.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..elemwise import zero_grads
from ..nn._util import uniform_type
from ..registry import OpDef, Param, assign, register

PARAMS = {
    "overlap_threshold": Param("float", 0.5, doc="IoU above which an anchor is a positive match."),
    "ignore_label": Param("float", -1.0, doc="Label for ignored anchors."),
    "negative_mining_ratio": Param("float", -1.0, doc="Max negatives per positive; -1: no mining."),
    "negative_mining_thresh": Param("float", 0.5, doc="Threshold used for negative mining."),
    "minimum_negative_samples": Param("int", 0, doc="Minimum number of negative samples."),
    "variances": Param("float_tuple", (0.1, 0.1, 0.2, 0.2), doc="Variances of the box regression target."),
}


def infer_shape(p, in_shapes):
    a, lab, pred = in_shapes
    if a is None or lab is None or pred is None:
        return list(in_shapes), [None] * 3
    if len(a) != 3 or a[0] != 1 or a[2] != 4:
        raise MXNetError(f"MultiBoxTarget: 'anchor' must be (1, num_anchors, 4), got {tuple(a)}")
    if len(lab) != 3 or lab[2] < 5:
        raise MXNetError(f"MultiBoxTarget: 'label' must be (batch, num_labels, >=5), got {tuple(lab)}")
    if len(pred) != 3 or pred[2] != a[1]:
        raise MXNetError(f"MultiBoxTarget: 'cls_pred' {tuple(pred)} must be (batch, classes, {a[1]})")
    return list(in_shapes), [(lab[0], a[1] * 4), (lab[0], a[1] * 4), (lab[0], a[1])]


def _iou(anchor, gt):
    """``(A, L)`` IoU as MXNet's target op computes it (areas unclamped, 0 for a zero union)."""
    lo = np.maximum(anchor[:, None, :2], gt[None, :, :2])
    hi = np.minimum(anchor[:, None, 2:], gt[None, :, 2:])
    inter = np.prod(np.maximum(hi - lo, 0), axis=-1)
    union = (np.prod(anchor[:, 2:] - anchor[:, :2], -1)[:, None]
             + np.prod(gt[:, 2:] - gt[:, :2], -1)[None, :] - inter)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union == 0, 0, inter / np.where(union == 0, 1, union))


def _match(iou, p, cls_pred):
    """``(flags, best_gt)``: flags 1 positive, 0 negative, -1 ignored, per anchor."""
    na, ng = iou.shape
    flags, best = np.full(na, -1), np.full(na, -1)
    best_iou = np.full(na, -1.0)
    free = iou.copy()
    while True:                                  # 1. greedy best pairs
        j, k = np.unravel_index(np.argmax(free), free.shape)
        if free[j, k] <= 1e-6:
            break
        flags[j], best[j], best_iou[j] = 1, k, free[j, k]
        free[j, :], free[:, k] = -1, -1
    rest = flags != 1
    if p["overlap_threshold"] > 0 or p["negative_mining_ratio"] > 0:   # 2. best gt of the others
        best[rest], best_iou[rest] = iou[rest].argmax(axis=1), iou[rest].max(axis=1)
    if p["overlap_threshold"] > 0:
        flags[rest & (best_iou > p["overlap_threshold"])] = 1
    npos = int((flags == 1).sum())
    if p["negative_mining_ratio"] > 0:           # 3. hard negatives
        nneg = min(int(npos * np.float32(p["negative_mining_ratio"])), na - npos)
        if nneg > 0:
            cand = np.flatnonzero((flags == -1) & (best_iou < p["negative_mining_thresh"]))
            if len(cand) < nneg:
                raise MXNetError(f"MultiBoxTarget: {len(cand)} anchors are below negative_mining_thresh "
                                 f"{p['negative_mining_thresh']}, fewer than the {nneg} negatives to mine")
            z = cls_pred[:, cand] - cls_pred[:, cand].max(axis=0)
            bg = np.exp(z[0]) / np.exp(z).sum(axis=0)
            flags[cand[np.argsort(bg, kind="stable")[:nneg]]] = 0
    else:
        flags[flags != 1] = 0
    return flags, best


def _encode(anchor, gt, v):
    aw, ah = anchor[:, 2] - anchor[:, 0], anchor[:, 3] - anchor[:, 1]
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    ax, ay = (anchor[:, 0] + anchor[:, 2]) / 2, (anchor[:, 1] + anchor[:, 3]) / 2
    gx, gy = (gt[:, 0] + gt[:, 2]) / 2, (gt[:, 1] + gt[:, 3]) / 2
    return np.stack([(gx - ax) / aw / v[0], (gy - ay) / ah / v[1],
                     np.log(gw / aw) / v[2], np.log(gh / ah) / v[3]], axis=1)


def forward(octx, p, inputs, outputs, req):
    anchor, labels, cls_pred = inputs
    anchor = anchor.reshape(-1, 4).astype(np.float32)
    nb, na = labels.shape[0], anchor.shape[0]
    loc, mask = np.zeros((nb, na, 4), np.float32), np.zeros((nb, na, 4), np.float32)
    cls = np.full((nb, na), p["ignore_label"], np.float32)
    for b in range(nb):
        lab = labels[b].astype(np.float32)
        ends = np.flatnonzero(lab[:, 0] == -1)
        ngt = int(ends[0]) if len(ends) else len(lab)
        if ngt == 0:
            continue
        flags, best = _match(_iou(anchor, lab[:ngt, 1:5]), p, cls_pred[b].astype(np.float32))
        pos = flags == 1
        cls[b, pos] = lab[best[pos], 0] + 1
        cls[b, flags == 0] = 0
        mask[b, pos] = 1
        with np.errstate(divide="ignore", invalid="ignore"):
            loc[b, pos] = _encode(anchor[pos], lab[best[pos], 1:5], np.float32(p["variances"]))
    assign(outputs[0], req[0], loc.reshape(nb, -1))
    assign(outputs[1], req[1], mask.reshape(nb, -1))
    assign(outputs[2], req[2], cls)


def _validate(p):
    if len(p["variances"]) != 4:
        raise MXNetError(f"MultiBoxTarget: 'variances' needs 4 values, got {p['variances']}")


register(OpDef("_contrib_MultiBoxTarget", forward, arguments=("anchor", "label", "cls_pred"), params=PARAMS,
               outputs=("loc_target", "loc_mask", "cls_target"), infer_shape=infer_shape,
               infer_type=uniform_type(3), gradient=zero_grads, validate=_validate, doc=__doc__))
