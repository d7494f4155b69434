"""``_contrib_box_nms`` (alias ``box_non_maximum_suppression``): greedy non-maximum suppression.

Each row of ``data (..., N, W)`` is a box ``[.., score, .., x1, y1, x2, y2, ..]`` (``score_index``,
four coordinates from ``coord_start``, an optional class at ``id_index``). Per batch (all leading
axes flattened):

    valid  = score > valid_thresh  (and id != background_id when id_index >= 0)
    order  = valid boxes by descending score (stable), cut to the first ``topk``
    for i in order: drop every later j with IoU(i, j) > overlap_thresh
                    (and the same class, unless force_suppress or id_index < 0)
    output = kept rows in that order, then rows of -1

``out_format`` != ``in_format`` re-encodes the kept coordinates (rows whose first coordinate is
negative are left as they are, as MXNet does). ``topk=0`` copies the input through. A hidden
second output records, per output row, the flat index of its input row (-1 for filler);
``_backward_contrib_box_nms`` routes the output gradient back through it:
``ddata[record[r]] = dout[r]``, zero for dropped rows (like MXNet's, it ignores a change of
format: the row's gradient is copied as it is).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..nn._util import backward_node, entry, uniform_type
from ..registry import OpDef, Param, assign, register
from ._box import format_param, pairwise_iou

PARAMS = {
    "overlap_thresh": Param("float", 0.5, doc="IoU above which the lower-scored box is suppressed."),
    "valid_thresh": Param("float", 0.0, doc="Only boxes with score > valid_thresh take part."),
    "topk": Param("int", -1, doc="Apply nms to the topk boxes by descending score; -1: all."),
    "coord_start": Param("int", 2, doc="Start index of the 4 consecutive coordinates."),
    "score_index": Param("int", 1, doc="Index of the score."),
    "id_index": Param("int", -1, doc="Index of the class id; -1 disables classes."),
    "background_id": Param("int", -1, doc="Class id ignored by nms (dropped)."),
    "force_suppress": Param("bool", False, doc="Suppress across classes too."),
    "in_format": format_param("The input box encoding."),
    "out_format": format_param("The output box encoding."),
}


def infer_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None:
        return [None], [None, None]
    if len(s) < 2:
        raise MXNetError(f"box_nms: 'data' must have ndim >= 2 (..., num_box, box_width), got {tuple(s)}")
    w, cs, si, ii = s[-1], p["coord_start"], p["score_index"], p["id_index"]
    if w and w < (6 if ii >= 0 else 5):
        raise MXNetError(f"box_nms: last axis of 'data' {tuple(s)} is too short for score, 4 coordinates"
                         + (" and id" if ii >= 0 else ""))
    coords = range(cs, cs + 4)
    if w and not (0 <= si < w and si not in coords and cs >= 0 and cs + 3 < w):
        raise MXNetError(f"box_nms: score_index {si} / coord_start {cs} out of range or overlapping "
                         f"for data shape {tuple(s)}")
    if w and ii >= 0 and not (ii < w and ii not in coords and ii != si):
        raise MXNetError(f"box_nms: id_index {ii} out of range or overlapping for data shape {tuple(s)}")
    return [s], [s, tuple(s[:-1]) + (1,)]


def _convert(box, src, dst):
    """In-place re-encoding of kept rows; MXNet skips a row whose first coordinate is negative."""
    rows = box[:, 0] >= 0
    b = box[rows]
    if src == "corner" and dst == "center":
        box[rows] = np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2,
                              b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)
    elif src == "center" and dst == "corner":
        box[rows] = np.stack([b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2,
                              b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2], axis=1)


def nms(data, p):
    """``(out, record)`` for data reshaped to ``(B, N, W)``; the module docstring is the spec."""
    nb, n, w = data.shape
    cs, si, ii, fmt = p["coord_start"], p["score_index"], p["id_index"], p["in_format"]
    topk = n if p["topk"] < 0 else min(n, p["topk"])
    if topk < 1:
        return data.copy(), np.arange(nb * n, dtype=data.dtype).reshape(nb, n, 1)
    out = np.full_like(data, -1)
    record = np.full((nb, n, 1), -1, dtype=data.dtype)
    valid = data[:, :, si] > p["valid_thresh"]
    if ii >= 0:
        valid &= data[:, :, ii] != p["background_id"]
    if not valid.any():
        return out, record
    for b in range(nb):
        idx = np.flatnonzero(valid[b])
        idx = idx[np.argsort(-data[b, idx, si], kind="stable")][:topk]
        boxes = data[b, idx, cs:cs + 4]
        iou = pairwise_iou(boxes, boxes, fmt)
        keep = np.ones(len(idx), dtype=bool)
        same = True if (p["force_suppress"] or ii < 0) else (
            data[b, idx, ii].astype(np.int64)[:, None] == data[b, idx, ii].astype(np.int64)[None, :])
        # pairwise_iou is 0 for disjoint boxes, so they never suppress each other.
        drop = (iou > p["overlap_thresh"]) & same
        for i in range(len(idx)):
            if keep[i]:
                keep[i + 1:] &= ~drop[i, i + 1:]
        kept = idx[keep]
        out[b, :len(kept)] = data[b, kept]
        record[b, :len(kept), 0] = b * n + kept
    if p["in_format"] != p["out_format"]:
        for b in range(nb):
            _convert(out[b, :, cs:cs + 4], p["in_format"], p["out_format"])
    return out, record


def forward(octx, p, inputs, outputs, req):
    x = inputs[0]
    out, record = nms(x.reshape((-1,) + x.shape[-2:]), p)
    assign(outputs[0], req[0], out.reshape(x.shape))
    assign(outputs[1], req[1], record.reshape(outputs[1].shape))


def backward(octx, p, inputs, outputs, req):
    og, record = inputs
    w = og.shape[-1]
    rec = record.reshape(-1).astype(np.int64)
    rows = rec >= 0
    dx = np.zeros((og.size // w, w), dtype=og.dtype)
    dx[rec[rows]] = og.reshape(-1, w)[rows]
    assign(outputs[0], req[0], dx.reshape(og.shape))


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_contrib_box_nms", [ograds[0], entry(node, 1)]))]


register(OpDef("_contrib_box_nms", forward, params=PARAMS, outputs=("output0", "output1"),
               num_visible_outputs=1, infer_shape=infer_shape, infer_type=uniform_type(2),
               gradient=gradient, aliases=("_contrib_box_non_maximum_suppression",), doc=__doc__))
register(OpDef("_backward_contrib_box_nms", backward, arguments=("ograd", "record"), params=PARAMS,
               infer_shape=lambda p, s: (list(s), [s[0]]), infer_type=uniform_type(1)))
