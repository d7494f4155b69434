"""ROIPooling: max pooling of each region of interest into a fixed ``pooled_size`` grid (Fast R-CNN).

``rois`` rows are ``[batch_index, x1, y1, x2, y2]`` in image coordinates. Each corner is scaled by
``spatial_scale`` and rounded half away from zero; the region (at least 1 x 1) is cut into
``ph x pw`` bins, bin ``i`` spanning ``[floor(i h / ph), ceil((i + 1) h / ph))`` rows from the region
start, clipped to the map::

    out[r, c, i, j] = max over bin (i, j) of data[b_r, c]      (0 for an empty bin or a bad b_r)
    ddata[argmax] += ograd                                      drois = 0

Outputs are ``output, maxidx`` (hidden): ``maxidx`` is the flat index into ``data`` of each maximum
(the first in row-major order; -1 where the bin is empty). ``_backward_ROIPooling`` takes
``(ograd, data, maxidx)`` and reads ``data`` only for its shape.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape

PARAMS = {
    "pooled_size": Param("shape", doc="ROI pooling output shape (h,w)"),
    "spatial_scale": Param("float", doc="Feature map size over image size (1 / total stride)."),
}


def infer_shape(p, in_shapes):
    d, r = in_shapes
    if d is not None and len(d) != 4:
        raise MXNetError(f"ROIPooling: 'data' must be 4-D (NCHW), got shape {tuple(d)}")
    r = merge_shape("ROIPooling", "rois", r, (0, 5))
    if len(p["pooled_size"]) != 2:
        raise MXNetError(f"ROIPooling: pooled_size must be (h, w), got {p['pooled_size']}")
    if d is None:
        return [d, r], [None, None]
    out = (r[0], d[1]) + tuple(p["pooled_size"])
    return [d, r], [out, out]


def _round(v):
    """C's ``round``: halves away from zero."""
    return int(np.sign(v) * np.floor(abs(v) + 0.5))


def forward(octx, p, inputs, outputs, req):
    x, rois = inputs
    N, C, H, W = x.shape
    PH, PW = p["pooled_size"]
    out = np.zeros((rois.shape[0], C, PH, PW), x.dtype)
    idx = np.full(out.shape, -1, np.int64)
    plane = np.arange(H * W).reshape(H, W)
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < N:
            continue
        x1, y1, x2, y2 = (_round(v * p["spatial_scale"]) for v in roi[1:])
        h, w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(PH):
            hs = min(max(int(np.floor(i * h / PH)) + y1, 0), H)
            he = min(max(int(np.ceil((i + 1) * h / PH)) + y1, 0), H)
            for j in range(PW):
                ws = min(max(int(np.floor(j * w / PW)) + x1, 0), W)
                we = min(max(int(np.ceil((j + 1) * w / PW)) + x1, 0), W)
                if he <= hs or we <= ws:
                    continue
                win = x[b, :, hs:he, ws:we].reshape(C, -1)
                k = win.argmax(axis=1)                      # the first maximum, as MXNet's '>'
                out[r, :, i, j] = win[np.arange(C), k]
                pos = plane[hs:he, ws:we].reshape(-1)[k]
                idx[r, :, i, j] = (b * C + np.arange(C)) * H * W + pos
    assign(outputs[0], req[0], out)
    assign(outputs[1], req[1], idx)


def backward(octx, p, inputs, outputs, req):
    g, x, idx = inputs
    grad = np.zeros(x.size, g.dtype)
    ok = idx >= 0
    np.add.at(grad, idx[ok].astype(np.int64), g[ok])
    assign(outputs[0], req[0], grad.reshape(x.shape))


def gradient(node, ograds):
    n = backward_node(node, "_backward_ROIPooling", [ograds[0], node.inputs[0], entry(node, 1)])
    return [entry(n), None]


def infer_type(p, in_types):
    dt = in_types[0] if in_types[0] is not None else in_types[1]
    return [dt, dt], [dt, np.dtype(np.int32)]


register(OpDef("ROIPooling", forward, arguments=["data", "rois"], outputs=["output", "maxidx"],
               num_visible_outputs=1, params=PARAMS, infer_shape=infer_shape, infer_type=infer_type,
               gradient=gradient, doc=__doc__))
register(OpDef("_backward_ROIPooling", backward, arguments=["ograd", "data", "maxidx"], params=PARAMS,
               ignore_inputs=[1], infer_shape=lambda p, s: (list(s), [s[1]]),
               infer_type=lambda p, t: (list(t), [t[0]])))
