"""``_contrib_box_iou``: intersection over union of every pair of boxes from two sets.

    lhs (..., 4), rhs (..., 4)  ->  out (lhs.shape[:-1] + rhs.shape[:-1])
    out[i, j] = |A_i ∩ B_j| / (|A_i| + |B_j| - |A_i ∩ B_j|),  0 where the boxes do not intersect

``format`` is 'corner' ([xmin, ymin, xmax, ymax]) or 'center' ([x, y, w, h]); an area with a
negative side counts as 0. MXNet does not backpropagate through it: the gradient is zero.
"""
from __future__ import annotations

from ...base import MXNetError
from ..elemwise import zero_grads
from ..nn._util import uniform_type
from ..registry import OpDef, assign, register
from ._box import format_param, pairwise_iou

PARAMS = {"format": format_param("The box encoding.")}


def infer_shape(p, in_shapes):
    lhs, rhs = in_shapes
    for name, s in (("lhs", lhs), ("rhs", rhs)):
        if s is not None and (len(s) < 2 or s[-1] not in (0, 4)):
            raise MXNetError(f"box_iou: '{name}' must have ndim >= 2 and a last axis of 4, got {tuple(s)}")
    if lhs is None or rhs is None:
        return list(in_shapes), [None]
    return list(in_shapes), [tuple(lhs[:-1]) + tuple(rhs[:-1])]


def forward(octx, p, inputs, outputs, req):
    lhs, rhs = inputs
    iou = pairwise_iou(lhs.reshape(-1, 4), rhs.reshape(-1, 4), p["format"])
    assign(outputs[0], req[0], iou.reshape(outputs[0].shape))


register(OpDef("_contrib_box_iou", forward, arguments=("lhs", "rhs"), params=PARAMS,
               infer_shape=infer_shape, infer_type=uniform_type(1), gradient=zero_grads, doc=__doc__))
