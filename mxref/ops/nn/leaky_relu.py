"""LeakyReLU: the leaky family — leaky, elu, selu, gelu, prelu (learned slope) and rrelu (random slope).

Math (``a`` is ``slope``; prelu's slope ``gamma`` is per channel, axis 1)::

    leaky  y = x if x > 0 else a x                  dy/dx = 1 or a
    elu    y = x if x > 0 else a (e^x - 1)          dy/dx = 1 or a e^x
    selu   y = L x if x > 0 else L A (e^x - 1)      dy/dx = L or L A e^x   (L, A: SELU constants)
    gelu   y = x Phi(x)  (Phi: normal CDF via erf)   dy/dx = Phi(x) + x phi(x)
    prelu  y = x if x > 0 else gamma x              dgamma = sum_{x <= 0} g x
    rrelu  y = x if x > 0 else r x, r ~ U[lower, upper] in training, (lower + upper) / 2 otherwise

Backward dependencies: ``_backward_LeakyReLU`` takes ``(ograd, data)`` plus ``gamma`` (prelu) or the
hidden slope output ``mask`` (rrelu).
"""
from __future__ import annotations

import math

import numpy as np

from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, merge_shape, out_entries, uniform_type

PARAMS = {
    "act_type": Param("str", "leaky", choices=("elu", "gelu", "leaky", "prelu", "rrelu", "selu"),
                      doc="Activation function to be applied."),
    "slope": Param("float", 0.25, doc="Init slope for the activation (leaky, elu)."),
    "lower_bound": Param("float", 0.125, doc="Lower bound of the random slope (rrelu)."),
    "upper_bound": Param("float", 0.334, doc="Upper bound of the random slope (rrelu)."),
}
_L, _A = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
_erf = np.frompyfunc(math.erf, 1, 1)  # numpy has no erf; gelu is not on a hot path


def _arguments(p):
    return ["data", "gamma"] if p["act_type"] == "prelu" else ["data"]


def _outputs(p):
    return ["output", "mask"] if p["act_type"] == "rrelu" else ["output"]


def _phi(x):
    return (0.5 * (1.0 + _erf(x / math.sqrt(2.0)))).astype(x.dtype)


def _gamma_shape(gshape, xshape):
    """Where gamma's dims sit against the data's (MXNet's ``expand_shape``): matched from the
    right, but only onto data axes 0 and 1, so a (C,) gamma is per channel, (N, C) per sample and
    channel; every other axis is 1."""
    out, s = [1] * len(xshape), len(gshape) - 1
    for i in range(len(xshape) - 1, -1, -1):
        if s >= 0 and i <= 1 and gshape[s] in (xshape[i], 1):
            out[i], s = gshape[s], s - 1
    return tuple(out)


def _gamma(x, gamma):
    return gamma.reshape(_gamma_shape(gamma.shape, x.shape)) if gamma.size > 1 else gamma.reshape(())


def forward(octx, p, inputs, outputs, req):
    x, t, a = inputs[0], p["act_type"], p["slope"]
    neg = x <= 0
    if t == "leaky":
        y = np.where(neg, a * x, x)
    elif t == "elu":
        y = np.where(neg, a * np.expm1(np.minimum(x, 0)), x)
    elif t == "selu":
        y = _L * np.where(neg, _A * np.expm1(np.minimum(x, 0)), x)
    elif t == "gelu":
        y = x * _phi(x)
    elif t == "prelu":
        y = np.where(neg, _gamma(x, inputs[1]) * x, x)
    else:
        lo, hi = p["lower_bound"], p["upper_bound"]
        r = octx.rng.uniform(lo, hi, x.shape) if octx.is_train else np.full(x.shape, (lo + hi) / 2)
        outputs[1][...] = r
        y = np.where(neg, r * x, x)
    assign(outputs[0], req[0], y.astype(x.dtype, copy=False))


def backward(octx, p, inputs, outputs, req):
    g, x, t, a = inputs[0], inputs[1], p["act_type"], p["slope"]
    neg = x <= 0
    if t == "leaky":
        d = np.where(neg, a, 1.0)
    elif t == "elu":
        d = np.where(neg, a * np.exp(np.minimum(x, 0)), 1.0)
    elif t == "selu":
        d = _L * np.where(neg, _A * np.exp(np.minimum(x, 0)), 1.0)
    elif t == "gelu":
        d = _phi(x) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    elif t == "prelu":
        gamma = inputs[2]
        d = np.where(neg, _gamma(x, gamma), 1.0)
        gs = _gamma_shape(gamma.shape, x.shape) if gamma.size > 1 else (1,) * x.ndim
        axes = tuple(i for i in range(x.ndim) if gs[i] == 1)
        assign(outputs[1], req[1], (g * x * neg).sum(axis=axes).reshape(gamma.shape))
    else:
        d = np.where(neg, inputs[2], 1.0)
    assign(outputs[0], req[0], (g * d).astype(g.dtype, copy=False))


def infer_shape(p, in_shapes):
    d, ins = in_shapes[0], list(in_shapes)
    if p["act_type"] == "prelu" and d is not None and ins[1] is None:
        ins[1] = merge_shape("LeakyReLU", "gamma", ins[1], (d[1] if len(d) > 1 else 1,))
    return ins, [d] * len(_outputs(p))


def gradient(node, ograds):
    t = node.params["act_type"]
    extra = [node.inputs[1]] if t == "prelu" else [entry(node, 1)] if t == "rrelu" else []
    bwd = backward_node(node, "_backward_LeakyReLU", [ograds[0], node.inputs[0]] + extra)
    return out_entries(bwd, 2 if t == "prelu" else 1)


LEAKY_RELU = OpDef("LeakyReLU", forward, arguments=_arguments, outputs=_outputs, num_visible_outputs=1,
                   params=PARAMS, infer_shape=infer_shape,
                   infer_type=uniform_type(lambda p: len(_outputs(p))),
                   gradient=gradient, inplace=[(0, 0)], resources=["random"], doc=__doc__)
# A PReLU slope variable starts at 0.25 unless it has an initializer of its own (as in MXNet).
LEAKY_RELU.input_var_attrs = {"gamma": {"__init__": '["Constant", {"value": 0.25}]'}}
register(LEAKY_RELU)
register(OpDef("_backward_LeakyReLU", backward,
               arguments=lambda p: ["ograd", "data"] + {"prelu": ["gamma"], "rrelu": ["mask"]}.get(
                   p["act_type"], []),
               outputs=_arguments, params=PARAMS, infer_shape=lambda p, s: (list(s), list(s[1:])[
                   :2 if p["act_type"] == "prelu" else 1]),
               infer_type=uniform_type(lambda p: len(_arguments(p)))))
