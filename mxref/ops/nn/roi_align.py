"""contrib.ROIAlign: bilinear, unquantised pooling of each region of interest (Mask R-CNN).

``rois`` rows are ``[batch_index, x1, y1, x2, y2]``; a negative batch index gives a zero output.
Corners are scaled by ``spatial_scale`` (and shifted by -0.5 when ``aligned``, Detectron2's
centre alignment; otherwise the region is at least 1 x 1). Each of the ``ph x pw`` bins averages
``gy x gx`` bilinear samples (``sample_ratio``, or ``ceil(region / pooled)`` when it is <= 0).
Both the bilinear weights and the bin averages factor by axis (``_resample.roi_align_matrix``)::

    out[r, c] = Wy_r @ data[b_r, c] @ Wx_r^T / (gy gx)
    ddata[b_r, c] += Wy_r^T @ ograd[r, c] @ Wx_r / (gy gx)        drois = 0

With ``position_sensitive`` (R-FCN) output channel ``c`` of bin ``(i, j)`` reads input channel
``c * ph * pw + i * pw + j``, so the output has ``C / (ph pw)`` channels.
``_backward_ROIAlign`` takes ``(ograd, data, rois)`` and reads ``data`` only for its shape.
"""
from __future__ import annotations

import math

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._resample import roi_align_matrix, separable, separable_t
from ._util import backward_node, entry, merge_shape

PARAMS = {
    "pooled_size": Param("shape", doc="ROI Align output roi feature map height and width: (h, w)"),
    "spatial_scale": Param("float", doc="Feature map size over image size (1 / total stride)."),
    "sample_ratio": Param("int", -1, doc="Optional sampling ratio of ROI align, adaptive by default."),
    "position_sensitive": Param("bool", False, doc="Position-sensitive RoI pooling (R-FCN)."),
    "aligned": Param("bool", False, doc="Center-aligned ROIAlign introduced in Detectron2."),
}


def infer_shape(p, in_shapes):
    d, r = in_shapes
    if d is not None and len(d) != 4:
        raise MXNetError(f"ROIAlign: 'data' must be 4-D (NCHW), got shape {tuple(d)}")
    r = merge_shape("ROIAlign", "rois", r, (0, 5))
    PH, PW = p["pooled_size"]
    if d is None:
        return [d, r], [None]
    C = d[1]
    if p["position_sensitive"]:
        if C % (PH * PW):
            raise MXNetError(f"ROIAlign: with position_sensitive the {C} channels of data shape "
                             f"{tuple(d)} must be divisible by pooled_size {PH}x{PW}")
        C //= PH * PW
    return [d, r], [(r[0], C, PH, PW)]


def _roi_terms(p, roi, H, W):
    """``(batch index, Wy, Wx)`` of one ROI, the bin average folded in; ``None`` to skip it."""
    b = int(roi[0])
    if b < 0:
        return None
    PH, PW = p["pooled_size"]
    off = 0.5 if p["aligned"] else 0.0
    x1, y1, x2, y2 = (float(v) * p["spatial_scale"] - off for v in roi[1:])
    rw, rh = x2 - x1, y2 - y1
    if p["aligned"]:
        if rw <= 0 or rh <= 0:
            raise MXNetError(f"ROIAlign: an aligned region must have a positive size, got roi {list(roi)}")
    else:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    s = p["sample_ratio"]
    gy = s if s > 0 else math.ceil(rh / PH)
    gx = s if s > 0 else math.ceil(rw / PW)
    wy = roi_align_matrix(y1, rh / PH, PH, gy, H) / gy
    wx = roi_align_matrix(x1, rw / PW, PW, gx, W) / gx
    return b, wy, wx


def _pick(p, full):
    """Position-sensitive channels: output ``(c, i, j)`` from input ``c * ph * pw + i * pw + j``."""
    if not p["position_sensitive"]:
        return full
    PH, PW = p["pooled_size"]
    full = full.reshape(-1, PH, PW, PH, PW)
    i, j = np.arange(PH)[:, None], np.arange(PW)[None, :]
    return full[:, i, j, i, j]


def forward(octx, p, inputs, outputs, req):
    x, rois = inputs
    out = np.zeros(outputs[0].shape, x.dtype)
    for r, roi in enumerate(rois):
        t = _roi_terms(p, roi, x.shape[2], x.shape[3])
        if t is not None:
            out[r] = _pick(p, separable(x[t[0]], t[1], t[2]))
    assign(outputs[0], req[0], out)


def backward(octx, p, inputs, outputs, req):
    g, x, rois = inputs
    grad = np.zeros(x.shape, g.dtype)
    PH, PW = p["pooled_size"]
    for r, roi in enumerate(rois):
        t = _roi_terms(p, roi, x.shape[2], x.shape[3])
        if t is None:
            continue
        gr = g[r]
        if p["position_sensitive"]:        # scatter each bin's gradient to its own input channel
            full = np.zeros((gr.shape[0], PH, PW, PH, PW), g.dtype)
            i, j = np.arange(PH)[:, None], np.arange(PW)[None, :]
            full[:, i, j, i, j] = gr
            gr = full.reshape(-1, PH, PW)
        grad[t[0]] += separable_t(gr, t[1], t[2])
    assign(outputs[0], req[0], grad)


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_ROIAlign", [ograds[0]] + list(node.inputs))), None]


register(OpDef("_contrib_ROIAlign", forward, arguments=["data", "rois"], params=PARAMS,
               infer_shape=infer_shape, infer_type=lambda p, t: ([t[0] or t[1]] * 2, [t[0] or t[1]]),
               gradient=gradient, doc=__doc__))
register(OpDef("_backward_ROIAlign", backward, arguments=["ograd", "data", "rois"], params=PARAMS,
               ignore_inputs=[1], infer_shape=lambda p, s: (list(s), [s[1]]),
               infer_type=lambda p, t: (list(t), [t[0]])))
