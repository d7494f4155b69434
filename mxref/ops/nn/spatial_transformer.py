"""SpatialTransformer: an affine GridGenerator followed by a BilinearSampler, as one operator.

``loc`` ``(N, 6)`` is the affine ``theta`` ``(N, 2, 3)``; the output has ``target_shape (H, W)``::

    grid_src[n] = theta[n] @ dst                 (dst: GridGenerator's normalised target points)
    out[n] = BilinearSampler(data[n], grid_src[n])
    ddata, dgrid = the sampler's backward        dloc[n] = dgrid[n] (2, H W) @ dst^T

Outputs are ``output, grid_dst, grid_src`` (the last two hidden). ``_backward_SpatialTransformer``
takes ``(ograd, data, grid_dst, grid_src)``. Only ``transform_type='affine'`` and
``sampler_type='bilinear'`` exist, as in MXNet; ``cudnn_off`` is accepted and ignored.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape, out_entries, uniform_type
from .bilinear_sampler import sample, sample_backward
from .grid_generator import affine_dst

PARAMS = {
    "target_shape": Param("shape", (0, 0), doc="output shape(h, w) of spatial transformer: (y, x)"),
    "transform_type": Param("str", choices=("affine",), doc="transformation type"),
    "sampler_type": Param("str", choices=("bilinear",), doc="sampling type"),
    "cudnn_off": Param("any", None, doc="whether to turn cudnn off (ignored)"),
}


def infer_shape(p, in_shapes):
    d, loc = in_shapes
    H, W = p["target_shape"]
    if H < 1 or W < 1:
        raise MXNetError(f"SpatialTransformer: target_shape must be positive, got {p['target_shape']}")
    if d is None:
        return list(in_shapes), [None] * 3
    if len(d) != 4:
        raise MXNetError(f"SpatialTransformer: 'data' must be 4-D (NCHW), got shape {tuple(d)}")
    loc = merge_shape("SpatialTransformer", "loc", loc, (d[0], 6))
    return [d, loc], [(d[0], d[1], H, W), (3, H * W), (d[0], 2, H * W)]


def forward(octx, p, inputs, outputs, req):
    x, loc = inputs
    H, W = p["target_shape"]
    dst = affine_dst(H, W, x.dtype)
    src = np.matmul(loc.reshape(-1, 2, 3), dst)
    assign(outputs[0], req[0], sample(x, src.reshape(-1, 2, H, W)))
    assign(outputs[1], req[1], dst)
    assign(outputs[2], req[2], src)


def backward(octx, p, inputs, outputs, req):
    g, x, dst, src = inputs
    gdata, ggrid = sample_backward(g, x, src.reshape(g.shape[0], 2, g.shape[2], g.shape[3]))
    assign(outputs[0], req[0], gdata)
    assign(outputs[1], req[1], np.matmul(ggrid.reshape(g.shape[0], 2, -1), dst.T).reshape(-1, 6))


def gradient(node, ograds):
    ins = [ograds[0], node.inputs[0], entry(node, 1), entry(node, 2)]
    return out_entries(backward_node(node, "_backward_SpatialTransformer", ins), 2)


register(OpDef("SpatialTransformer", forward, arguments=["data", "loc"],
               outputs=["output", "grid_dst", "grid_src"], num_visible_outputs=1, params=PARAMS,
               infer_shape=infer_shape, infer_type=uniform_type(3), gradient=gradient, doc=__doc__))
register(OpDef("_backward_SpatialTransformer", backward, arguments=["ograd", "data", "grid_dst", "grid_src"],
               outputs=["data", "loc"], params=PARAMS, infer_type=uniform_type(2),
               infer_shape=lambda p, s: (list(s), [s[1], None if s[1] is None else (s[1][0], 6)])))
