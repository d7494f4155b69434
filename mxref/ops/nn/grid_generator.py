"""GridGenerator: the sampling grid of a BilinearSampler from an affine matrix or an optical flow.

``affine``: ``data`` ``(N, 6)`` is ``theta`` ``(N, 2, 3)``; the target grid of ``target_shape
(H, W)`` has normalised points ``(x_j, y_i, 1)`` with ``x_j = -1 + 2 j / (W - 1)``::

    out[n, :, i, j] = theta[n] @ (x_j, y_i, 1)         dtheta[n] = ograd[n] (2, H W) @ dst^T

``warp``: ``data`` ``(N, 2, H, W)`` is a flow in pixels added to each pixel's own coordinates,
then normalised to ``[-1, 1]``::

    out[n, 0] = (flow[n, 0] + j) / ((W - 1) / 2) - 1     out[n, 1] = (flow[n, 1] + i) / ((H - 1) / 2) - 1
    dflow[n, 0] = ograd[n, 0] / ((W - 1) / 2)            dflow[n, 1] = ograd[n, 1] / ((H - 1) / 2)

Outputs are ``output, grid_dst`` (the target points, hidden). ``affine_dst`` is shared with
SpatialTransformer. ``_backward_GridGenerator`` takes ``(ograd, grid_dst)``.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape, uniform_type

PARAMS = {
    "transform_type": Param("str", choices=("affine", "warp"), doc="The type of transformation."),
    "target_shape": Param("shape", (0, 0), doc="Output shape (H, W); required for affine."),
}


def affine_dst(H: int, W: int, dtype) -> np.ndarray:
    """The target points ``(3, H W)``: rows x, y (normalised to [-1, 1]) and 1."""
    x = -1.0 + np.arange(W) * (2.0 / (W - 1)) if W > 1 else np.full(W, -1.0)
    y = -1.0 + np.arange(H) * (2.0 / (H - 1)) if H > 1 else np.full(H, -1.0)
    return np.stack([np.tile(x, H), np.repeat(y, W), np.ones(H * W)]).astype(dtype)


def _half_sizes(H, W, dtype):
    return np.array([(W - 1) / 2, (H - 1) / 2], dtype).reshape(1, 2, 1, 1)


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if p["transform_type"] == "affine":
        H, W = p["target_shape"]
        if H < 1 or W < 1:
            raise MXNetError(f"GridGenerator: affine needs a positive target_shape, got {p['target_shape']}")
        d = merge_shape("GridGenerator", "data", d, (0, 6))
        return [d], [(d[0], 2, H, W), (3, H * W)]
    if d is None:
        return [None], [None, None]
    if len(d) != 4 or d[1] != 2:
        raise MXNetError(f"GridGenerator: warp needs a (batch, 2, H, W) flow, got data shape {tuple(d)}")
    return [d], [d, (2, d[2], d[3])]


def forward(octx, p, inputs, outputs, req):
    x = inputs[0]
    if p["transform_type"] == "affine":
        H, W = p["target_shape"]
        dst = affine_dst(H, W, x.dtype)
        out = np.matmul(x.reshape(-1, 2, 3), dst).reshape(-1, 2, H, W)
    else:
        H, W = x.shape[2:]
        dst = np.stack(np.meshgrid(np.arange(W), np.arange(H))).astype(x.dtype)   # (x, y) per pixel
        out = (x + dst[None]) / _half_sizes(H, W, x.dtype) - 1
    assign(outputs[0], req[0], out)
    assign(outputs[1], req[1], dst)


def backward(octx, p, inputs, outputs, req):
    g, dst = inputs
    if p["transform_type"] == "affine":
        grad = np.matmul(g.reshape(g.shape[0], 2, -1), dst.T).reshape(g.shape[0], 6)
    else:
        grad = g / _half_sizes(g.shape[2], g.shape[3], g.dtype)
    assign(outputs[0], req[0], grad)


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_GridGenerator", [ograds[0], entry(node, 1)]))]


def _backward_shape(p, s):
    g = s[0]
    if g is None:
        return list(s), [None]
    return list(s), [(g[0], 6) if p["transform_type"] == "affine" else g]


register(OpDef("GridGenerator", forward, outputs=["output", "grid_dst"], num_visible_outputs=1,
               params=PARAMS, infer_shape=infer_shape, infer_type=uniform_type(2), gradient=gradient,
               doc=__doc__))
register(OpDef("_backward_GridGenerator", backward, arguments=["ograd", "grid_dst"], params=PARAMS,
               infer_shape=_backward_shape, infer_type=lambda p, t: (list(t), [t[0]])))
