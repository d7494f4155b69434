"""L2Normalization: divide by the L2 norm over one sample, one position's channels, or one channel.

Math, with the sum over the axes ``S`` that ``mode`` picks (``data`` of shape ``(N, C, ...)``)::

    instance  S = every axis but 0          norm shape (N,)
    channel   S = axis 1                    norm shape (N, 1, ...)    (needs ndim >= 3)
    spatial   S = every axis after 1        norm shape (N, C)         (needs ndim >= 3)

    norm = sqrt(sum_S x^2 + eps)    out = x / norm
    dx = (g - out * sum_S(g * out)) / norm

Outputs are ``output, norm`` (``norm`` hidden). ``_backward_L2Normalization`` takes
``(ograd, output, norm)``: the input is not kept for backward.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, uniform_type

PARAMS = {
    "eps": Param("float", 1e-10, doc="A small constant for numerical stability."),
    "mode": Param("str", "instance", choices=("channel", "instance", "spatial"),
                  doc="Specify the dimension along which to compute L2 norm."),
}


def _axes(p, ndim):
    return {"instance": tuple(range(1, ndim)), "channel": (1,), "spatial": tuple(range(2, ndim))}[p["mode"]]


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return [None], [None, None]
    if p["mode"] != "instance" and len(d) < 3:
        raise MXNetError(f"L2Normalization: mode '{p['mode']}' needs at least 3 dimensions, "
                         f"got data shape {tuple(d)}")
    norm = {"instance": (d[0],), "channel": (d[0], 1) + tuple(d[2:]), "spatial": tuple(d[:2])}[p["mode"]]
    return [d], [d, norm]


def forward(octx, p, inputs, outputs, req):
    x = inputs[0]
    norm = np.sqrt(np.square(x).sum(axis=_axes(p, x.ndim), keepdims=True) + np.asarray(p["eps"], x.dtype))
    assign(outputs[0], req[0], x / norm)
    assign(outputs[1], req[1], norm.reshape(outputs[1].shape))


def backward(octx, p, inputs, outputs, req):
    g, out, norm = inputs
    axes = _axes(p, out.ndim)
    keep = tuple(1 if i in axes else n for i, n in enumerate(out.shape))
    norm = norm.reshape(keep)
    assign(outputs[0], req[0], (g - out * (g * out).sum(axis=axes, keepdims=True)) / norm)


def gradient(node, ograds):
    ins = [ograds[0], entry(node, 0), entry(node, 1)]
    return [entry(backward_node(node, "_backward_L2Normalization", ins))]


register(OpDef("L2Normalization", forward, outputs=["output", "norm"], num_visible_outputs=1,
               params=PARAMS, infer_shape=infer_shape, infer_type=uniform_type(2), gradient=gradient,
               doc=__doc__))
register(OpDef("_backward_L2Normalization", backward, arguments=["ograd", "output", "norm"], params=PARAMS,
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=lambda p, t: (list(t), [t[0]])))
