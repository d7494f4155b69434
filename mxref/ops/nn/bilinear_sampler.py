"""BilinearSampler: sample NCHW data at the points of a normalised grid (Spatial Transformer Networks).

``grid`` has shape ``(N, 2, Ho, Wo)``: channel 0 holds x, channel 1 holds y, both in ``[-1, 1]``
across the input (``x_src = (gx + 1)(W - 1) / 2``). Each output pixel interpolates its four
neighbours; neighbours outside the input count as zero::

    x0 = floor(x_src), fx = x_src - x0 (likewise y)
    out[n, c, i, j] = sum_{dy, dx in {0, 1}} wy(dy) wx(dx) data[n, c, y0 + dy, x0 + dx]
        with wx(0) = 1 - fx, wx(1) = fx
    ddata: ograd spread back with the same weights
    dgx = (W - 1) / 2 * sum_c ograd * sum_{dy, dx} wy(dy) (+1 if dx else -1) v(dy, dx)   (dgy alike)

``sample``/``sample_backward`` are shared with SpatialTransformer. Outputs are ``output, tmp``
(``tmp`` hidden, kept for MXNet's output count). ``_backward_BilinearSampler`` takes
``(ograd, data, grid)``. ``cudnn_off`` is accepted and ignored.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, out_entries, uniform_type

PARAMS = {"cudnn_off": Param("any", None, doc="whether to turn cudnn off (ignored)")}


def _corners(grid, H, W):
    """For each of the four neighbours: ``(y index, x index, wy, wx, sign_y, sign_x, inside)``."""
    x = (grid[:, 0] + 1) * (W - 1) / 2
    y = (grid[:, 1] + 1) * (H - 1) / 2
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = x - x0, y - y0
    for dy in (0, 1):
        for dx in (0, 1):
            yi, xi = y0.astype(np.int64) + dy, x0.astype(np.int64) + dx
            inside = (yi >= 0) & (yi <= H - 1) & (xi >= 0) & (xi <= W - 1)
            yield (np.clip(yi, 0, H - 1), np.clip(xi, 0, W - 1), fy if dy else 1 - fy,
                   fx if dx else 1 - fx, 1 if dy else -1, 1 if dx else -1, inside)


def sample(data, grid):
    """Bilinear samples of ``data`` ``(N, C, H, W)`` at ``grid`` ``(N, 2, Ho, Wo)``."""
    N, C, H, W = data.shape
    n = np.arange(N)[:, None, None]
    dt = np.moveaxis(data, 1, -1)                                   # (N, H, W, C)
    out = np.zeros(grid.shape[:1] + grid.shape[2:] + (C,), np.result_type(data, grid))
    for yi, xi, wy, wx, _, _, inside in _corners(grid, H, W):
        out += dt[n, yi, xi] * (wy * wx * inside)[..., None]
    return np.moveaxis(out, -1, 1).astype(data.dtype, copy=False)


def sample_backward(g, data, grid):
    """``(ddata, dgrid)`` of ``sample`` given the head gradient ``g`` ``(N, C, Ho, Wo)``."""
    N, C, H, W = data.shape
    n = np.broadcast_to(np.arange(N)[:, None, None], grid.shape[:1] + grid.shape[2:])
    dt, gt = np.moveaxis(data, 1, -1), np.moveaxis(g, 1, -1)          # (N, ., ., C)
    gdata = np.zeros(dt.shape, g.dtype)
    gx, gy = np.zeros(n.shape, g.dtype), np.zeros(n.shape, g.dtype)
    for yi, xi, wy, wx, sy, sx, inside in _corners(grid, H, W):
        np.add.at(gdata, (n[inside], yi[inside], xi[inside]), gt[inside] * (wy * wx)[inside][:, None])
        gv = (gt * dt[n, yi, xi]).sum(axis=-1) * inside                 # sum_c ograd * v
        gx += gv * wy * sx
        gy += gv * wx * sy
    dgrid = np.stack([gx * (W - 1) / 2, gy * (H - 1) / 2], axis=1)
    return np.moveaxis(gdata, -1, 1), dgrid.astype(g.dtype, copy=False)


def infer_shape(p, in_shapes):
    d, g = in_shapes
    for name, s in (("data", d), ("grid", g)):
        if s is not None and len(s) != 4:
            raise MXNetError(f"BilinearSampler: '{name}' must be 4-D, got shape {tuple(s)}")
    if g is not None and g[1] != 2:
        raise MXNetError(f"BilinearSampler: 'grid' must have 2 channels (x, y), got shape {tuple(g)}")
    if d is None or g is None:
        return list(in_shapes), [None, None]
    if d[0] != g[0]:
        raise MXNetError(f"BilinearSampler: batch sizes of data {tuple(d)} and grid {tuple(g)} differ")
    out = (d[0], d[1], g[2], g[3])
    return list(in_shapes), [out, out]


def forward(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], sample(*inputs))
    assign(outputs[1], req[1], 0)


def backward(octx, p, inputs, outputs, req):
    for o, r, v in zip(outputs, req, sample_backward(*inputs)):
        assign(o, r, v)


def gradient(node, ograds):
    return out_entries(backward_node(node, "_backward_BilinearSampler", [ograds[0]] + list(node.inputs)), 2)


register(OpDef("BilinearSampler", forward, arguments=["data", "grid"], outputs=["output", "tmp"],
               num_visible_outputs=1, params=PARAMS, infer_shape=infer_shape, infer_type=uniform_type(2),
               gradient=gradient, doc=__doc__))
register(OpDef("_backward_BilinearSampler", backward, arguments=["ograd", "data", "grid"],
               outputs=["data", "grid"], params=PARAMS, infer_shape=lambda p, s: (list(s), [s[1], s[2]]),
               infer_type=uniform_type(2)))
