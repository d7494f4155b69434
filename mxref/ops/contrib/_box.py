"""Box geometry shared by the detection operators: encodings, areas, pairwise IoU."""
from __future__ import annotations

import numpy as np

from ..registry import Param

FORMATS = ("corner", "center")


def format_param(doc: str) -> Param:
    return Param("str", "corner", choices=FORMATS,
                 doc=doc + " 'corner': [xmin, ymin, xmax, ymax]; 'center': [x, y, width, height].")


def to_corner(box: np.ndarray, fmt: str) -> np.ndarray:
    """``(..., 4)`` boxes as corners; center boxes are ``[x - w/2, y - h/2, x + w/2, y + h/2]``."""
    if fmt == "corner":
        return box
    half = box[..., 2:4] / 2
    return np.concatenate([box[..., 0:2] - half, box[..., 0:2] + half], axis=-1)


def area(box: np.ndarray, fmt: str) -> np.ndarray:
    """Width * height, 0 where either is negative (MXNet's ``BoxArea``)."""
    wh = box[..., 2:4] - box[..., 0:2] if fmt == "corner" else box[..., 2:4]
    return np.where((wh[..., 0] < 0) | (wh[..., 1] < 0), 0, wh[..., 0] * wh[..., 1])


def pairwise_iou(a: np.ndarray, b: np.ndarray, fmt: str) -> np.ndarray:
    """IoU of every box in ``a (N, 4)`` with every box in ``b (M, 4)``: ``(N, M)``, 0 where they
    do not intersect (the union is never divided then)."""
    ca, cb = to_corner(a, fmt), to_corner(b, fmt)
    lo = np.maximum(ca[:, None, 0:2], cb[None, :, 0:2])
    hi = np.minimum(ca[:, None, 2:4], cb[None, :, 2:4])
    wh = np.maximum(hi - lo, 0)
    inter = wh[..., 0] * wh[..., 1]
    union = area(a, fmt)[:, None] + area(b, fmt)[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(inter > 0, inter / np.where(inter > 0, union, 1), 0).astype(a.dtype)

