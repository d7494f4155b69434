"""InstanceNorm: normalise each (sample, channel) over its spatial positions, then scale and shift.

Math, ``data`` of shape ``(N, C, ...)``, statistics per ``(n, c)`` over the remaining axes::

    mean = E[x]    var = E[(x - mean)^2]    xhat = (x - mean) / sqrt(var + eps)
    out = gamma[c] * xhat + beta[c]
    dgamma = sum g xhat    dbeta = sum g    dx = (w - mean(w) - xhat mean(w xhat)) / sqrt(var + eps)

with ``w = gamma[c] * ograd``: GroupNorm with one group per channel (``group_norm.group_forward``).
The same normalisation runs in training and inference. Outputs are ``output, mean, var`` (the last
two of shape ``(N, C)``, hidden); ``_backward_InstanceNorm`` takes ``(ograd, data, gamma, mean, var)``.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape, out_entries, uniform_type
from .group_norm import group_backward, group_forward

PARAMS = {"eps": Param("float", 1e-3, doc="An `epsilon` parameter to prevent division by 0.")}


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), [None] * 3
    if len(d) < 3:
        raise MXNetError(f"InstanceNorm: 'data' must have at least 3 dimensions, got shape {tuple(d)}")
    ins = [d] + [merge_shape("InstanceNorm", n, s, (d[1],)) for n, s in zip(("gamma", "beta"), in_shapes[1:])]
    return ins, [d, (d[0], d[1]), (d[0], d[1])]


def forward(octx, p, inputs, outputs, req):
    x, gamma, beta = inputs
    out, mean, var = group_forward(x, x.shape[1], gamma, beta, p["eps"])
    for o, r, v in zip(outputs, req, (out, mean, var)):
        assign(o, r, v)


def backward(octx, p, inputs, outputs, req):
    g, x, gamma, mean, var = inputs
    std = np.sqrt(var + np.asarray(p["eps"], var.dtype))
    for o, r, v in zip(outputs, req, group_backward(g, x, gamma, mean, std)):
        assign(o, r, v)


def gradient(node, ograds):
    ins = [ograds[0], node.inputs[0], node.inputs[1], entry(node, 1), entry(node, 2)]
    return out_entries(backward_node(node, "_backward_InstanceNorm", ins), 3)


register(OpDef("InstanceNorm", forward, arguments=["data", "gamma", "beta"],
               outputs=["output", "mean", "var"], num_visible_outputs=1, params=PARAMS,
               infer_shape=infer_shape, infer_type=uniform_type(3), gradient=gradient, doc=__doc__))
register(OpDef("_backward_InstanceNorm", backward, arguments=["ograd", "data", "gamma", "mean", "var"],
               outputs=["data", "gamma", "beta"], params=PARAMS, infer_type=uniform_type(3),
               infer_shape=lambda p, s: (list(s), [s[1], s[2], s[2]])))
