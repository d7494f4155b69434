"""LayerNorm: normalise along one ``axis`` (default the last) per sample, then scale and shift.

Math (``H`` elements along ``axis``; statistics keep ``axis`` with size 1)::

    mean = E[x]    std = sqrt(E[(x - mean)^2] + eps)    xhat = (x - mean) / std
    out = gamma * xhat + beta
    dgamma = sum g xhat    dbeta = sum g      (over every axis but ``axis``)
    dx = (gamma g - mean(gamma g) - xhat mean(gamma g xhat)) / std     (means along ``axis``)

Outputs are ``output, mean, std`` (hidden unless ``output_mean_var``). Backward dependencies:
``_backward_LayerNorm`` takes ``(ograd, data, gamma, mean, std)``.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape, normalized_dx, out_entries, uniform_type

PARAMS = {
    "axis": Param("int", -1, doc="The axis to perform layer normalization on."),
    "eps": Param("float", 1e-5, doc="Epsilon added to the variance."),
    "output_mean_var": Param("bool", False, doc="Also output the mean and std."),
}


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), [None] * 3
    if not -len(d) <= p["axis"] < len(d):
        raise MXNetError(f"LayerNorm: axis {p['axis']} is out of range for data shape {tuple(d)}")
    ax = p["axis"] % len(d)
    c = (d[ax],)
    ins = [d] + [merge_shape("LayerNorm", n, s, c) for n, s in zip(("gamma", "beta"), in_shapes[1:])]
    stat = tuple(1 if i == ax else n for i, n in enumerate(d))
    return ins, [d, stat, stat]


def _bshape(p, x):
    shape = [1] * x.ndim
    shape[p["axis"] % x.ndim] = x.shape[p["axis"] % x.ndim]
    return shape


def forward(octx, p, inputs, outputs, req):
    x, gamma, beta = inputs
    ax = p["axis"] % x.ndim
    mean = x.mean(axis=ax, keepdims=True)
    std = np.sqrt(np.square(x - mean).mean(axis=ax, keepdims=True) + p["eps"]).astype(x.dtype)
    bs = _bshape(p, x)
    assign(outputs[0], req[0], (x - mean) / std * gamma.reshape(bs) + beta.reshape(bs))
    assign(outputs[1], req[1], mean)
    assign(outputs[2], req[2], std)


def backward(octx, p, inputs, outputs, req):
    g, x, gamma, mean, std = inputs
    ax = p["axis"] % x.ndim
    others = tuple(i for i in range(x.ndim) if i != ax)
    xhat = (x - mean) / std
    gg = g * gamma.reshape(_bshape(p, x))
    dx = normalized_dx(gg, xhat, std, axis=ax)
    assign(outputs[0], req[0], dx)
    # NOTE: the parameter gradients sum over every row; numpy adds a strided axis one row at a
    # time, so float32 sums over thousands of rows drift by ~n * eps: accumulate in float64.
    acc = np.float64 if x.dtype.itemsize < 8 else None
    assign(outputs[1], req[1], (g * xhat).sum(axis=others, dtype=acc))
    assign(outputs[2], req[2], g.sum(axis=others, dtype=acc))


def gradient(node, ograds):
    ins = [ograds[0], node.inputs[0], node.inputs[1], entry(node, 1), entry(node, 2)]
    return out_entries(backward_node(node, "_backward_LayerNorm", ins), 3)


register(OpDef("LayerNorm", forward, arguments=["data", "gamma", "beta"], outputs=["output", "mean", "std"],
               num_visible_outputs=lambda p: 3 if p["output_mean_var"] else 1, params=PARAMS,
               infer_shape=infer_shape, infer_type=uniform_type(3), gradient=gradient, doc=__doc__))
register(OpDef("_backward_LayerNorm", backward, arguments=["ograd", "data", "gamma", "mean", "std"],
               outputs=["data", "gamma", "beta"], params=PARAMS, infer_type=uniform_type(3),
               infer_shape=lambda p, s: (list(s), [s[1], s[2], s[2]])))
