"""_contrib_RROIAlign (``mx.nd.contrib.RROIAlign``): ROI Align over rotated boxes.

Math, for ROI ``(b, cx, cy, w, h, theta)`` (image coordinates times ``spatial_scale``; theta in
degrees; ``w, h`` at least 1), output ``(PH, PW) = pooled_size``, ``S`` samples per bin side
(``sampling_ratio``, or ``ceil(h / PH)`` / ``ceil(w / PW)`` when it is not positive)::

    yy = -h/2 + ph * h/PH + (iy + 0.5) * h/(PH*S)     xx = -w/2 + pw * w/PW + (ix + 0.5) * w/(PW*S)
    x = xx cos(theta) + yy sin(theta) + cx            y = yy cos(theta) - xx sin(theta) + cy
    out[r, c, ph, pw] = mean over the bin's samples of bilinear(data[b, c], y, x)

A sample outside ``[-1, H] x [-1, W]`` counts as 0; one inside is clamped to the map first (Detectron's
ROIAlign rules, as MXNet's rroi_align.cc). Arithmetic in the data dtype, as MXNet's kernel. MXNet
defines no gradient (its backward raises), and neither does mxref. Kernels: numpy, one
vectorised bilinear gather per ROI over every channel and sample.
"""
from __future__ import annotations

import math

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import uniform_type

PARAMS = {
    "pooled_size": Param("shape", doc="Output size (height, width)."),
    "spatial_scale": Param("float", doc="Ratio of the feature map to the image size."),
    "sampling_ratio": Param("int", -1, doc="Samples per bin side; <= 0 adapts to the ROI size."),
}


def _bilinear(img: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``img`` (C, H, W) sampled at points ``y, x`` (any shape) -> (C, *shape)."""
    _, height, width = img.shape
    t = img.dtype.type
    outside = (y < -1.0) | (y > height) | (x < -1.0) | (x > width)
    y, x = np.maximum(y, t(0)), np.maximum(x, t(0))
    y0, x0 = y.astype(np.int64), x.astype(np.int64)
    ytop, xtop = y0 >= height - 1, x0 >= width - 1
    y0, x0 = np.where(ytop, height - 1, y0), np.where(xtop, width - 1, x0)
    y1, x1 = np.where(ytop, height - 1, y0 + 1), np.where(xtop, width - 1, x0 + 1)
    y, x = np.where(ytop, y0.astype(img.dtype), y), np.where(xtop, x0.astype(img.dtype), x)
    ly, lx = y - y0.astype(img.dtype), x - x0.astype(img.dtype)
    hy, hx = t(1) - ly, t(1) - lx
    val = (hy * hx * img[:, y0, x0] + hy * lx * img[:, y0, x1] + ly * hx * img[:, y1, x0]
           + ly * lx * img[:, y1, x1])
    return np.where(outside, t(0), val)


def forward(octx, p, inputs, outputs, req):
    data, rois = inputs
    ph_n, pw_n = p["pooled_size"]
    t = data.dtype.type
    out = np.zeros(outputs[0].shape, data.dtype)
    for r, roi in enumerate(rois):
        cx, cy, w, h = (t(v) * t(p["spatial_scale"]) for v in roi[1:5])
        theta = t(roi[5] * math.pi / 180.0)
        w, h = max(w, t(1)), max(h, t(1))
        bh, bw = h / t(ph_n), w / t(pw_n)
        gh = p["sampling_ratio"] if p["sampling_ratio"] > 0 else int(math.ceil(h / t(ph_n)))
        gw = p["sampling_ratio"] if p["sampling_ratio"] > 0 else int(math.ceil(w / t(pw_n)))
        yy = (-h / t(2) + np.arange(ph_n, dtype=data.dtype)[:, None] * bh
              + (np.arange(gh, dtype=data.dtype)[None, :] + t(0.5)) * bh / t(gh))        # (PH, gh)
        xx = (-w / t(2) + np.arange(pw_n, dtype=data.dtype)[:, None] * bw
              + (np.arange(gw, dtype=data.dtype)[None, :] + t(0.5)) * bw / t(gw))        # (PW, gw)
        yy, xx = yy[:, None, :, None], xx[None, :, None, :]                               # (PH, PW, gh, gw)
        cos, sin = np.cos(theta, dtype=data.dtype), np.sin(theta, dtype=data.dtype)
        x = xx * cos + yy * sin + cx
        y = yy * cos - xx * sin + cy
        vals = _bilinear(data[int(roi[0])], y, x)                     # (C, PH, PW, gh, gw)
        out[r] = vals.sum(axis=(3, 4)) / t(gh * gw)
    assign(outputs[0], req[0], out)


def infer_shape(p, in_shapes):
    data, rois = in_shapes
    if len(p["pooled_size"]) != 2:
        raise MXNetError(f"RROIAlign: pooled_size must be (height, width), got {p['pooled_size']}")
    if data is not None and len(data) != 4:
        raise MXNetError(f"RROIAlign: data must be 4-D (batch, channel, height, width), got {tuple(data)}")
    if rois is not None and (len(rois) != 2 or rois[1] != 6):
        raise MXNetError(f"RROIAlign: rois must be (num_rois, 6) [batch, x, y, w, h, theta], got "
                         f"{tuple(rois)}")
    if data is None or rois is None:
        return [data, rois], [None]
    return [data, rois], [(rois[0], data[1]) + tuple(p["pooled_size"])]


def _no_gradient(node, ograds):
    raise MXNetError("RROIAlign: backward is not supported (as in MXNet)")


register(OpDef("_contrib_RROIAlign", forward, arguments=["data", "rois"], params=PARAMS,
               infer_shape=infer_shape, infer_type=uniform_type(), gradient=_no_gradient, doc=__doc__))
