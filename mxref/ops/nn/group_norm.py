"""GroupNorm: normalise each group of ``C / num_groups`` channels per sample, then scale and shift.

Math, ``data`` viewed as ``(N, G, C/G * spatial)``, statistics over the last axis per ``(n, g)``::

    mean = E[x]    std = sqrt(E[(x - mean)^2] + eps)    xhat = (x - mean) / std
    out = gamma[g] * xhat + beta[g]                      (gamma, beta: shape (num_groups,))
    dgamma = sum g xhat    dbeta = sum g                 (over everything but the group)
    dx = (w - mean(w) - xhat mean(w xhat)) / std         w = gamma[g] * ograd, means per (n, g)

Outputs are ``output, mean, std`` (``mean``/``std`` of shape ``(N, G)``, hidden unless
``output_mean_var``). ``_backward_GroupNorm`` takes ``(ograd, data, gamma, mean, std)``.
``group_forward``/``group_backward`` are shared with InstanceNorm (one group per channel).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape, normalized_dx, out_entries, uniform_type

PARAMS = {
    "num_groups": Param("int", 1, doc="Total number of groups."),
    "eps": Param("float", 1e-5, doc="An `epsilon` parameter to prevent division by 0."),
    "output_mean_var": Param("bool", False, doc="Output the mean and std calculated along the given axis."),
}


def group_forward(x, groups, gamma, beta, eps):
    """``(out, mean, var)`` of ``x`` normalised per ``(sample, group)``; stats shaped ``(N, G)``."""
    xg = x.reshape(x.shape[0], groups, -1)
    mean = xg.mean(axis=2, keepdims=True)
    var = np.square(xg - mean).mean(axis=2, keepdims=True)
    out = (xg - mean) / np.sqrt(var + eps) * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    return out.reshape(x.shape).astype(x.dtype, copy=False), mean[:, :, 0], var[:, :, 0]


def group_backward(g, x, gamma, mean, std):
    """``(dx, dgamma, dbeta)`` of ``group_forward`` given the head gradient ``g``."""
    groups = mean.shape[1]
    xg, gg = x.reshape(x.shape[0], groups, -1), g.reshape(x.shape[0], groups, -1)
    mean, std = mean[:, :, None], std[:, :, None]
    xhat = (xg - mean) / std
    w = gg * gamma.reshape(1, -1, 1)
    dx = normalized_dx(w, xhat, std, axis=2)
    acc = np.float64 if x.dtype.itemsize < 8 else None     # sums over many rows (as LayerNorm)
    return dx.reshape(x.shape), (gg * xhat).sum(axis=(0, 2), dtype=acc), gg.sum(axis=(0, 2), dtype=acc)


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), [None] * 3
    G = p["num_groups"]
    if len(d) < 3:
        raise MXNetError(f"GroupNorm: 'data' must have at least 3 dimensions, got shape {tuple(d)}")
    if G < 1 or d[1] % G:
        raise MXNetError(f"GroupNorm: the {d[1]} channels of data shape {tuple(d)} are not "
                         f"divisible by num_groups={G}")
    ins = [d] + [merge_shape("GroupNorm", n, s, (G,)) for n, s in zip(("gamma", "beta"), in_shapes[1:])]
    return ins, [d, (d[0], G), (d[0], G)]


def forward(octx, p, inputs, outputs, req):
    x, gamma, beta = inputs
    out, mean, var = group_forward(x, p["num_groups"], gamma, beta, p["eps"])
    std = np.sqrt(var + np.asarray(p["eps"], var.dtype))
    for o, r, v in zip(outputs, req, (out, mean, std)):
        assign(o, r, v)


def backward(octx, p, inputs, outputs, req):
    for o, r, v in zip(outputs, req, group_backward(*inputs)):
        assign(o, r, v)


def gradient(node, ograds):
    ins = [ograds[0], node.inputs[0], node.inputs[1], entry(node, 1), entry(node, 2)]
    return out_entries(backward_node(node, "_backward_GroupNorm", ins), 3)


register(OpDef("GroupNorm", forward, arguments=["data", "gamma", "beta"], outputs=["output", "mean", "std"],
               num_visible_outputs=lambda p: 3 if p["output_mean_var"] else 1, params=PARAMS,
               infer_shape=infer_shape, infer_type=uniform_type(3), gradient=gradient, doc=__doc__))
register(OpDef("_backward_GroupNorm", backward, arguments=["ograd", "data", "gamma", "mean", "std"],
               outputs=["data", "gamma", "beta"], params=PARAMS, infer_type=uniform_type(3),
               infer_shape=lambda p, s: (list(s), [s[1], s[2], s[2]])))
