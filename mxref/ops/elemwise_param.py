"""Elementwise math with parameters: ``hard_sigmoid``, ``smooth_l1``, ``contrib.quadratic``,
``contrib.div_sqrt_dim``, and the reduction ``moments`` (mean and variance).

Math and gradients::

    hard_sigmoid(x; a=0.2, b=0.5) = max(0, min(1, a x + b))     d/dx = a where 0 < a x + b < 1
    smooth_l1(x; s=1)  = (s x)^2 / 2  if |x| < 1/s^2             d/dx = s^2 x
                       = |x| - 1/(2 s^2) otherwise               d/dx = sign(x)
    quadratic(x; a, b, c) = a x^2 + b x + c                       d/dx = 2 a x + b
    div_sqrt_dim(x) = x / sqrt(x.shape[-1])                       d/dx = 1 / sqrt(x.shape[-1])
    moments(x, axes) = (mean, var), var = mean((x - mean)^2)      dx = gm/N + gv 2 (x - mean)/N

Outputs keep the input dtype (integers truncate, as MXNet's kernels cast back; ``div_sqrt_dim``
of integers divides by the truncated root, as MXNet does). Kernels: numpy.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .nn._util import backward_node, out_entries
from .reduce import reduce_axes, reduced_shape
from .registry import OpDef, Param, assign, register


def _cast(out, value):
    return np.copyto(out, value, casting="unsafe")


def _elementwise(name: str, fn, deriv, params: dict, doc: str, aliases=()):
    """Register ``name(data)`` = ``fn(x, p)`` and ``_backward_<name>(ograd, data)`` = ``g * deriv(x, p)``."""
    def forward(octx, p, inputs, outputs, req):
        if req[0] == "add":
            outputs[0] += fn(inputs[0], p).astype(outputs[0].dtype)
        elif req[0] != "null":
            _cast(outputs[0], fn(inputs[0], p))

    def backward(octx, p, inputs, outputs, req):
        g, x = inputs
        assign(outputs[0], req[0], (g * deriv(x, p)).astype(outputs[0].dtype))

    def gradient(node, ograds):
        return out_entries(backward_node(node, "_backward_" + name, [ograds[0], node.inputs[0]]), 1)

    register(OpDef(name, forward, params=params, gradient=gradient, inplace=[(0, 0)], doc=doc,
                   aliases=aliases))
    register(OpDef("_backward_" + name, backward, arguments=("ograd", "data"), params=params,
                   inplace=[(0, 0)]))


def _hard_sigmoid(x, p):
    return np.clip(p["alpha"] * x + p["beta"], 0, 1)


def _hard_sigmoid_d(x, p):
    v = p["alpha"] * x + p["beta"]
    return np.where((v > 0) & (v < 1), p["alpha"], 0.0)


def _smooth_l1(x, p):
    s2 = p["scalar"] ** 2
    return np.where(np.abs(x) < 1 / s2, 0.5 * s2 * np.square(x, dtype=np.float64), np.abs(x) - 0.5 / s2)


def _smooth_l1_d(x, p):
    s2 = p["scalar"] ** 2
    return np.where(np.abs(x) < 1 / s2, s2 * x, np.sign(x))


_elementwise("hard_sigmoid", _hard_sigmoid, _hard_sigmoid_d,
             {"alpha": Param("float", 0.2, doc="Slope of hard sigmoid."),
              "beta": Param("float", 0.5, doc="Bias of hard sigmoid.")},
             "hard_sigmoid(data, alpha=0.2, beta=0.5) = max(0, min(1, alpha * data + beta)).")
_elementwise("smooth_l1", _smooth_l1, _smooth_l1_d, {"scalar": Param("float", 1.0, doc="sigma")},
             "smooth_l1(data, scalar=1): (s x)^2/2 where |x| < 1/s^2, else |x| - 1/(2 s^2).")
_elementwise("_contrib_quadratic", lambda x, p: p["a"] * x * x + p["b"] * x + p["c"],
             lambda x, p: 2 * p["a"] * x + p["b"],
             {k: Param("float", 0.0, doc=f"Coefficient {k} of a x^2 + b x + c.") for k in "abc"},
             "quadratic(data, a=0, b=0, c=0) = a data^2 + b data + c, elementwise.")


def _div_sqrt_dim(octx, p, inputs, outputs, req):
    x = inputs[0]
    root = math.sqrt(x.shape[-1]) if x.ndim else 1.0
    if x.dtype.kind in "iub":
        root = float(int(root))     # MXNet takes the root in the data's type: sqrt(3) -> 1 for ints
    scaled = x / root
    if req[0] == "add":
        outputs[0] += scaled.astype(outputs[0].dtype)
    elif req[0] != "null":
        _cast(outputs[0], scaled)


register(OpDef("_contrib_div_sqrt_dim", _div_sqrt_dim, inplace=[(0, 0)],
               gradient=lambda node, og: [NodeEntry(make_node("_contrib_div_sqrt_dim", [og[0]],
                                                              node.name + "_backward"), 0, 0)],
               doc="div_sqrt_dim(data) = data / sqrt(data.shape[-1]); its gradient is the same scaling."))


# ---------------------------------------------------------------------------------------------
# moments
# ---------------------------------------------------------------------------------------------

_MOMENTS_PARAMS = {"axes": Param("axis", None, doc="Axes to aggregate over (required in effect)."),
                   "keepdims": Param("bool", False, doc="Keep the reduced axes with length 1.")}


def _moments_axes(p, ndim: int):
    if not p["axes"]:
        raise MXNetError("moments: empty axes is not supported; pass every axis for global moments")
    return reduce_axes("moments", p["axes"], ndim)


def _moments_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None:
        return list(in_shapes), [None, None]
    out = reduced_shape(s, _moments_axes(p, len(s)), p["keepdims"])
    return list(in_shapes), [out, out]


def _moments(octx, p, inputs, outputs, req):
    x = inputs[0]
    axes = _moments_axes(p, x.ndim)
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float64)
    var = np.square(x - mean).mean(axis=axes, keepdims=True)
    assign(outputs[0], req[0], mean.reshape(outputs[0].shape).astype(outputs[0].dtype))
    assign(outputs[1], req[1], var.reshape(outputs[1].shape).astype(outputs[1].dtype))


def _backward_moments(octx, p, inputs, outputs, req):
    gm, gv, x, mean = inputs
    axes = _moments_axes(p, x.ndim)
    kept = reduced_shape(x.shape, axes, True)
    n = x.size // max(1, int(np.prod(kept)))
    dx = gm.reshape(kept) / n + gv.reshape(kept) * 2 * (x - mean.reshape(kept)) / n
    assign(outputs[0], req[0], dx.astype(outputs[0].dtype))


def _moments_gradient(node, ograds):
    gm, gv = [g if g is not None else NodeEntry(make_node("zeros_like", [NodeEntry(node, i, 0)],
                                                          f"{node.name}_ograd{i}"), 0, 0)
              for i, g in enumerate(ograds)]
    n = backward_node(node, "_backward_moments", [gm, gv, node.inputs[0], NodeEntry(node, 0, 0)])
    return out_entries(n, 1)


register(OpDef("moments", _moments, params=_MOMENTS_PARAMS, outputs=("mean", "var"),
               infer_shape=_moments_shape,
               infer_type=lambda p, t: (list(t), [t[0], t[0]]), gradient=_moments_gradient,
               doc="moments(data, axes, keepdims=False): the mean and variance over ``axes``."))
register(OpDef("_backward_moments", _backward_moments, params=_MOMENTS_PARAMS,
               arguments=("ograd_mean", "ograd_var", "data", "mean"),
               infer_shape=lambda p, s: (list(s), [s[2]]), infer_type=lambda p, t: (list(t), [t[2]])))
