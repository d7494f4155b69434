"""``_contrib_bipartite_matching``: greedy bipartite matching of a score matrix.

For each ``(..., R, C)`` matrix (leading axes are batches), pairs are visited by score (descending,
or ascending with ``is_ascend``; ties in row-major order); a pair whose row and column are both
free is matched, and the walk stops at the first free pair whose score fails the threshold
(``score > threshold``, or ``score < threshold`` ascending) or once the match count exceeds
``topk`` (MXNet checks ``count > topk`` after matching, so ``topk`` allows ``topk + 1`` matches).

Outputs: ``row_marker (..., R)`` — the matched column of each row, and ``col_marker (..., C)`` —
the matched row of each column; -1 where unmatched. The gradient is zero (MXNet's
``_backward_contrib_bipartite_matching`` writes zeros).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..elemwise import zero_grads
from ..nn._util import uniform_type
from ..registry import REQUIRED, OpDef, Param, assign, register

PARAMS = {
    "is_ascend": Param("bool", False, doc="Match the lowest scores first."),
    "threshold": Param("float", REQUIRED, doc="Scores past it (below, or above if ascending) stop matching."),
    "topk": Param("int", -1, doc="Limit the number of matches; -1 for none."),
}


def infer_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None:
        return [None], [None, None]
    if len(s) < 2:
        raise MXNetError(f"bipartite_matching: 'data' must have ndim >= 2, got shape {tuple(s)}")
    return [s], [tuple(s[:-1]), tuple(s[:-2]) + (s[-1],)]


def match(scores: np.ndarray, p):
    """``(row_marker, col_marker)`` of one ``(R, C)`` matrix."""
    r, c = scores.shape
    flat = scores.reshape(-1)
    order = np.argsort(flat if p["is_ascend"] else -flat, kind="stable")
    rows, cols = np.full(r, -1, scores.dtype), np.full(c, -1, scores.dtype)
    count = 0
    for k in order:
        i, j = divmod(int(k), c)
        if rows[i] != -1 or cols[j] != -1:
            continue
        s = flat[k]
        if not (s < p["threshold"] if p["is_ascend"] else s > p["threshold"]):
            break
        rows[i], cols[j] = j, i
        count += 1
        if 0 < p["topk"] < count:
            break
    return rows, cols


def forward(octx, p, inputs, outputs, req):
    x = inputs[0]
    mats = x.reshape((-1,) + x.shape[-2:])
    pairs = [match(m, p) for m in mats]
    assign(outputs[0], req[0], np.stack([a for a, _ in pairs]).reshape(outputs[0].shape))
    assign(outputs[1], req[1], np.stack([b for _, b in pairs]).reshape(outputs[1].shape))


register(OpDef("_contrib_bipartite_matching", forward, params=PARAMS, outputs=("output0", "output1"),
               infer_shape=infer_shape, infer_type=uniform_type(2), gradient=zero_grads, doc=__doc__))
