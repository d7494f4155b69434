"""Correlation (FlowNet): compare patches of two feature maps over a neighbourhood of displacements.

Both inputs ``(N, C, H, W)`` are zero-padded by ``pad_size``. With ``k = kernel_size``,
``d = max_displacement``, radius ``r = d // stride2`` and ``D = 2 r + 1``, output channel
``q = (p + r) D + (o + r)`` holds displacement ``(p s2, o s2)`` for ``p, o in [-r, r]``; output
pixel ``(i, j)`` has its patch corner at ``(y, x) = (i s1 + d, j s1 + d)`` of the padded maps::

    out[n, q, i, j] = 1/(k k C) sum_{h, w < k} sum_c f(a[n, c, y+h, x+w], b[n, c, y+h + p s2, x+w + o s2])
    f(a, b) = a b  (is_multiply)  or  |a - b|
    output size: ceil((H + 2 pad - 2 (d + (k - 1) // 2)) / stride1)      (likewise the width)

The gradient spreads each output's head gradient over its two patches: ``b`` resp. ``a`` for the
product, ``+-sign(a - b)`` (``+1`` for the first input when equal) for the absolute difference.
Outputs are ``output, tmp1, tmp2`` (the padded inputs in NHWC, hidden). Each displacement is one
vectorised pass over all pixels. ``_backward_Correlation`` takes ``(ograd, data1, data2)``.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, merge_shape, out_entries, uniform_type

PARAMS = {
    "kernel_size": Param("int", 1, doc="kernel size for Correlation must be an odd number"),
    "max_displacement": Param("int", 1, doc="Max displacement of Correlation"),
    "stride1": Param("int", 1, doc="stride1 quantize data1 globally"),
    "stride2": Param("int", 1, doc="stride2 quantize data2 within the neighborhood centered around data1"),
    "pad_size": Param("int", 0, doc="pad for Correlation"),
    "is_multiply": Param("bool", True, doc="operation type is either multiplication or subduction"),
}


def _geometry(p, shape):
    """``(top channels, top height, top width, radius, grid width)``."""
    Hp, Wp = shape[2] + 2 * p["pad_size"], shape[3] + 2 * p["pad_size"]
    border = p["max_displacement"] + (p["kernel_size"] - 1) // 2
    th = math.ceil((Hp - 2 * border) / p["stride1"])
    tw = math.ceil((Wp - 2 * border) / p["stride1"])
    r = p["max_displacement"] // p["stride2"]
    return (2 * r + 1) ** 2, th, tw, r, 2 * r + 1


def infer_shape(p, in_shapes):
    for k in ("kernel_size", "stride1", "stride2"):
        if p[k] < 1:
            raise MXNetError(f"Correlation: {k} must be positive, got {p[k]}")
    d = in_shapes[0] if in_shapes[0] is not None else in_shapes[1]
    if d is None:
        return list(in_shapes), [None] * 3
    if len(d) != 4:
        raise MXNetError(f"Correlation: 'data1' must be 4-D (NCHW), got shape {tuple(d)}")
    d2 = merge_shape("Correlation", "data2", in_shapes[1], d)
    tc, th, tw, _, _ = _geometry(p, d)
    if th < 1 or tw < 1:
        raise MXNetError(f"Correlation: data shape {tuple(d)} is too small for "
                         f"kernel_size={p['kernel_size']}, max_displacement={p['max_displacement']}, "
                         f"pad_size={p['pad_size']}")
    pad = (d[0], d[2] + 2 * p["pad_size"], d[3] + 2 * p["pad_size"], d[1])
    return [d, d2], [(d[0], tc, th, tw), pad, pad]


def _windows(p, a, b, th, tw, dy, dx):
    """The padded regions of ``a`` and of ``b`` shifted by ``(dy, dx)`` that the patches cover."""
    md, k, s1 = p["max_displacement"], p["kernel_size"], p["stride1"]
    sh, sw = (th - 1) * s1 + k, (tw - 1) * s1 + k
    return (np.s_[:, :, md:md + sh, md:md + sw],
            np.s_[:, :, md + dy:md + dy + sh, md + dx:md + dx + sw])


def _displacements(p, shape):
    tc, th, tw, r, gw = _geometry(p, shape)
    s2 = p["stride2"]
    for q in range(tc):
        yield q, (q // gw - r) * s2, (q % gw - r) * s2, th, tw


def forward(octx, p, inputs, outputs, req):
    pad, k, s1 = p["pad_size"], p["kernel_size"], p["stride1"]
    a, b = (np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) for x in inputs)
    out = np.empty(outputs[0].shape, a.dtype)
    for q, dy, dx, th, tw in _displacements(p, inputs[0].shape):
        wa, wb = _windows(p, a, b, th, tw, dy, dx)
        e = (a[wa] * b[wb]).sum(axis=1) if p["is_multiply"] else np.abs(a[wa] - b[wb]).sum(axis=1)
        out[:, q] = sliding_window_view(e, (k, k), axis=(1, 2))[:, ::s1, ::s1].sum(axis=(-1, -2))
    assign(outputs[0], req[0], out / (k * k * a.shape[1]))
    assign(outputs[1], req[1], a.transpose(0, 2, 3, 1))
    assign(outputs[2], req[2], b.transpose(0, 2, 3, 1))


def backward(octx, p, inputs, outputs, req):
    g, x1, x2 = inputs
    pad, k, s1 = p["pad_size"], p["kernel_size"], p["stride1"]
    a, b = (np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) for x in (x1, x2))
    ga, gb = np.zeros_like(a, dtype=g.dtype), np.zeros_like(b, dtype=g.dtype)
    g = g / (k * k * a.shape[1])
    for q, dy, dx, th, tw in _displacements(p, x1.shape):
        wa, wb = _windows(p, a, b, th, tw, dy, dx)
        ge = np.zeros((g.shape[0], (th - 1) * s1 + k, (tw - 1) * s1 + k), g.dtype)
        for h in range(k):              # every patch position receives its output's gradient
            for w in range(k):
                ge[:, h:h + (th - 1) * s1 + 1:s1, w:w + (tw - 1) * s1 + 1:s1] += g[:, q]
        ge = ge[:, None]
        if p["is_multiply"]:
            ga[wa] += ge * b[wb]
            gb[wb] += ge * a[wa]
        else:
            sign = np.where(a[wa] >= b[wb], 1.0, -1.0)
            ga[wa] += ge * sign
            gb[wb] -= ge * sign
    H, W = x1.shape[2:]
    assign(outputs[0], req[0], ga[:, :, pad:pad + H, pad:pad + W])
    assign(outputs[1], req[1], gb[:, :, pad:pad + H, pad:pad + W])


def gradient(node, ograds):
    return out_entries(backward_node(node, "_backward_Correlation", [ograds[0]] + list(node.inputs)), 2)


register(OpDef("Correlation", forward, arguments=["data1", "data2"], outputs=["output", "tmp1", "tmp2"],
               num_visible_outputs=1, params=PARAMS, infer_shape=infer_shape, infer_type=uniform_type(3),
               gradient=gradient, doc=__doc__))
register(OpDef("_backward_Correlation", backward, arguments=["ograd", "data1", "data2"],
               outputs=["data1", "data2"], params=PARAMS, infer_type=uniform_type(2),
               infer_shape=lambda p, s: (list(s), [s[1], s[2]])))
