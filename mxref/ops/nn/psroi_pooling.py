"""_contrib_PSROIPooling (``mx.nd.contrib.PSROIPooling``): position-sensitive ROI average pooling (R-FCN).

Math, for ROI ``r = (b, x1, y1, x2, y2)`` (image coordinates, scaled by ``spatial_scale`` after
rounding), ``P = pooled_size``, ``G = group_size`` (default ``P``), output channel ``c``::

    start = round(x1, y1) * scale     size = max((round(x2, y2) + 1) * scale - start, 0.1)
    bin (ph, pw) = [floor(start + ph * size / P), ceil(start + (ph + 1) * size / P))  clipped to the map
    gh, gw = floor(ph * G / P), floor(pw * G / P)           (the position-sensitive score map)
    out[r, c, ph, pw] = mean of data[b, (c * G + gh) * G + gw] over the bin   (0 for an empty bin)
    d data[b, ...] += g[r, c, ph, pw] / |bin| over the bin                     (the ROIs get none)

The data has ``output_dim * G * G`` channels. Backward dependencies: ``_backward_PSROIPooling``
takes ``(ograd, data, rois)`` (the data for its shape only). Kernels: numpy, one loop over
(ROI, bin) with all output channels at once (MXNet's reference is the C loop of psroi_pooling.cc).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, uniform_type

PARAMS = {
    "spatial_scale": Param("float", doc="Ratio of the feature map to the image size."),
    "output_dim": Param("int", doc="Number of output channels."),
    "pooled_size": Param("int", doc="Output height and width."),
    "group_size": Param("int", 0, doc="Position-sensitive grid size; 0 means pooled_size."),
}


def _round(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)          # C's round: halves away from zero


def _bins(p, shape, rois):
    """Yield ``(roi, batch, channels, hs, he, ws, we, ph, pw)`` for every non-empty bin."""
    _, _, height, width = shape
    size, g = p["pooled_size"], p["group_size"] or p["pooled_size"]
    scale = p["spatial_scale"]
    for r, roi in enumerate(rois.astype(np.float64)):
        x1, y1, x2, y2 = _round(roi[1:])
        sw, sh = x1 * scale, y1 * scale
        rw, rh = max((x2 + 1) * scale - sw, 0.1), max((y2 + 1) * scale - sh, 0.1)
        for ph in range(size):
            hs = min(max(int(np.floor(ph * rh / size + sh)), 0), height)
            he = min(max(int(np.ceil((ph + 1) * rh / size + sh)), 0), height)
            gh = min(max(int(np.floor(ph * g / size)), 0), g - 1)
            for pw in range(size):
                ws = min(max(int(np.floor(pw * rw / size + sw)), 0), width)
                we = min(max(int(np.ceil((pw + 1) * rw / size + sw)), 0), width)
                if he <= hs or we <= ws:
                    continue
                gw = min(max(int(np.floor(pw * g / size)), 0), g - 1)
                chans = (np.arange(p["output_dim"]) * g + gh) * g + gw
                yield r, int(roi[0]), chans, hs, he, ws, we, ph, pw


def forward(octx, p, inputs, outputs, req):
    data, rois = inputs
    out = np.zeros(outputs[0].shape, np.float64)
    for r, b, chans, hs, he, ws, we, ph, pw in _bins(p, data.shape, rois):
        out[r, :, ph, pw] = data[b, chans, hs:he, ws:we].astype(np.float64).mean(axis=(1, 2))
    assign(outputs[0], req[0], out)


def backward(octx, p, inputs, outputs, req):
    g, data, rois = inputs
    dx = np.zeros(data.shape, np.float64)
    for r, b, chans, hs, he, ws, we, ph, pw in _bins(p, data.shape, rois):
        area = (he - hs) * (we - ws)
        dx[b, chans, hs:he, ws:we] += (g[r, :, ph, pw].astype(np.float64) / area)[:, None, None]
    assign(outputs[0], req[0], dx)
    assign(outputs[1], req[1], 0)


def infer_shape(p, in_shapes):
    data, rois = in_shapes
    g = p["group_size"] or p["pooled_size"]
    if data is not None and (len(data) != 4 or (data[1] and data[1] != p["output_dim"] * g * g)):
        raise MXNetError(f"PSROIPooling: data shape {tuple(data)} must be (batch, output_dim * "
                         f"group_size^2 = {p['output_dim'] * g * g}, height, width)")
    if rois is not None and (len(rois) != 2 or rois[1] != 5):
        raise MXNetError(f"PSROIPooling: rois shape {tuple(rois)} must be (num_rois, 5)")
    out = None if rois is None else (rois[0], p["output_dim"], p["pooled_size"], p["pooled_size"])
    return [data, rois], [out]


def gradient(node, ograds):
    bwd = backward_node(node, "_backward_PSROIPooling", [ograds[0], *node.inputs])
    return [entry(bwd, 0), entry(bwd, 1)]


register(OpDef("_contrib_PSROIPooling", forward, arguments=["data", "rois"], params=PARAMS,
               infer_shape=infer_shape, infer_type=uniform_type(), gradient=gradient, doc=__doc__))
register(OpDef("_backward_PSROIPooling", backward, arguments=["ograd", "data", "rois"],
               outputs=["data_grad", "rois_grad"], params=PARAMS, ignore_inputs=[1],
               infer_shape=lambda p, s: (list(s), [s[1], s[2]]),
               infer_type=lambda p, t: (list(t), [t[1], t[2]])))
