"""LRN: local response normalisation across ``nsize`` neighbouring channels (AlexNet).

Math (``W(c)`` is the channel window ``[c - nsize//2, c + nsize//2]``, clipped; ``a`` = alpha,
``b`` = beta)::

    s_c  = knorm + a / nsize * sum_{j in W(c)} x_j^2          out_c = x_c * s_c^-b
    dx_j = g_j s_j^-b - 2 a b / nsize * x_j * sum_{c in W(j)} g_c x_c s_c^(-b-1)

Outputs are ``output, tmp_norm`` (``s``, hidden). Backward dependencies: ``_backward_LRN`` takes
``(ograd, data, tmp_norm)``.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, uniform_type

PARAMS = {
    "alpha": Param("float", 1e-4, doc="The variance scaling parameter."),
    "beta": Param("float", 0.75, doc="The power parameter."),
    "knorm": Param("float", 2.0, doc="The bias added to the scaled sum of squares."),
    "nsize": Param("int", doc="Normalisation window width in channels."),
}


def window_sum(v: np.ndarray, nsize: int) -> np.ndarray:
    """Sum over the clipped channel window (axis 1) via one cumulative sum."""
    half = nsize // 2
    c = v.shape[1]
    csum = np.concatenate([np.zeros_like(v[:, :1]), np.cumsum(v, axis=1)], axis=1)
    hi = np.minimum(np.arange(c) + half + 1, c)
    lo = np.maximum(np.arange(c) - half, 0)
    return csum[:, hi] - csum[:, lo]


def forward(octx, p, inputs, outputs, req):
    x = inputs[0]
    s = p["knorm"] + p["alpha"] / p["nsize"] * window_sum(x * x, p["nsize"])
    assign(outputs[0], req[0], x * s ** -p["beta"])
    assign(outputs[1], req[1], s)


def backward(octx, p, inputs, outputs, req):
    g, x, s = inputs
    b, n = p["beta"], p["nsize"]
    inner = window_sum(g * x * s ** (-b - 1), n)
    assign(outputs[0], req[0], g * s ** -b - 2 * p["alpha"] * b / n * x * inner)


def _validate(p):
    if p["nsize"] <= 0:
        raise MXNetError(f"LRN: nsize must be positive, got {p['nsize']}")


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is not None and len(d) < 2:
        raise MXNetError(f"LRN: data must have a channel axis (at least 2-D), got shape {tuple(d)}")
    return list(in_shapes), [d, d]


register(OpDef("LRN", forward, outputs=["output", "tmp_norm"], num_visible_outputs=1, params=PARAMS,
               infer_shape=infer_shape, infer_type=uniform_type(2), validate=_validate, doc=__doc__,
               gradient=lambda node, og: [entry(backward_node(
                   node, "_backward_LRN", [og[0], node.inputs[0], entry(node, 1)]))]))
register(OpDef("_backward_LRN", backward, arguments=["ograd", "data", "tmp_norm"], params=PARAMS,
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=uniform_type(1)))
