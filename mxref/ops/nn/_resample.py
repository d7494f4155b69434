"""Separable resampling matrices shared by BilinearResize2D, AdaptiveAvgPooling2D and ROIAlign.

Each of these operators maps an ``(H, W)`` plane to a ``(P, Q)`` one as ``out = Wy @ x @ Wx^T``
with ``Wy`` of shape ``(P, H)`` and ``Wx`` of shape ``(Q, W)``: bilinear interpolation and box
averaging both factor into a row weight times a column weight. The backward is the transpose,
``dx = Wy^T @ dout @ Wx``. Building the two small matrices and calling einsum keeps every operator
one vectorised expression over all channels.
"""
from __future__ import annotations

import numpy as np


def separable(x: np.ndarray, wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
    """``wy @ x @ wx.T`` over the last two axes of ``x``."""
    return np.einsum("ph,...hw,qw->...pq", wy, x, wx, optimize=True)


def separable_t(g: np.ndarray, wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
    """The transpose of ``separable``: ``wy.T @ g @ wx`` over the last two axes of ``g``."""
    return np.einsum("ph,...pq,qw->...hw", wy, g, wx, optimize=True)


def resize_matrix(in_size: int, out_size: int, align_corners: bool) -> np.ndarray:
    """Bilinear resize weights ``(out_size, in_size)`` as MXNet's BilinearResize2D computes them.

    With ``align_corners`` the corner pixel centres map onto each other (``src = d (in-1)/(out-1)``),
    else ``src = (d + 0.5) in/out - 0.5`` clamped at 0. The source index is truncated, its right
    neighbour is itself at the last pixel. Scales and positions are float32, as in MXNet.
    """
    w = np.zeros((out_size, in_size))
    if in_size == out_size:
        return np.eye(in_size)
    if out_size > 1:
        scale = np.float32((in_size - 1) / (out_size - 1) if align_corners else in_size / out_size)
    else:
        scale = np.float32(0)
    d = np.arange(out_size, dtype=np.float32)
    src = scale * d if align_corners else np.maximum(scale * (d + np.float32(0.5)) - np.float32(0.5), 0)
    lo = src.astype(np.int64)
    hi = np.where(lo < in_size - 1, lo + 1, lo)
    lam = (src - lo).astype(np.float64)
    rows = np.arange(out_size)
    np.add.at(w, (rows, lo), 1 - lam)
    np.add.at(w, (rows, hi), lam)
    return w


def adaptive_matrix(in_size: int, out_size: int) -> np.ndarray:
    """Adaptive average pooling weights: row ``o`` averages ``[floor(o in/out), ceil((o+1) in/out))``."""
    o = np.arange(out_size)
    start = np.floor(o * in_size / out_size).astype(np.int64)
    end = np.ceil((o + 1) * in_size / out_size).astype(np.int64)
    i = np.arange(in_size)
    inside = (i[None, :] >= start[:, None]) & (i[None, :] < end[:, None])
    return inside / (end - start)[:, None]


def roi_align_matrix(start: float, bin_size: float, pooled: int, grid: int, size: int) -> np.ndarray:
    """ROIAlign's summed interpolation weights ``(pooled, size)`` along one axis.

    Bin ``p`` samples ``grid`` points ``start + p bin + (i + 0.5) bin / grid``; a point outside
    ``[-1, size]`` contributes nothing, one in ``[-1, 0]`` is clamped to 0 and one past the last pixel
    takes the last pixel (Detectron's rule, as in MXNet).
    """
    w = np.zeros((pooled, size))
    p = np.repeat(np.arange(pooled), grid)
    i = np.tile(np.arange(grid), pooled)
    pos = start + p * bin_size + (i + 0.5) * bin_size / grid
    ok = (pos >= -1.0) & (pos <= size)
    pos = np.maximum(pos, 0.0)
    lo = pos.astype(np.int64)
    last = lo >= size - 1
    lo = np.where(last, size - 1, lo)
    hi = np.where(last, lo, lo + 1)
    lam = np.where(last, 0.0, pos - lo)
    np.add.at(w, (p[ok], lo[ok]), 1 - lam[ok])
    np.add.at(w, (p[ok], hi[ok]), lam[ok])
    return w
