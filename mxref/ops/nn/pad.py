"""Pad: pad the spatial axes of a 4-D or 5-D array with a constant, the edge values, or a reflection.

Math: ``out = numpy.pad(x, pad_width, mode)``. The gradient is the adjoint of that index map: every
output position adds its gradient to the input position it was copied from (constant padding
copies nothing, so its gradient is a crop). ``pad_width`` lists (before, after) per axis and must be
zero on the first two axes, as in MXNet. Backward dependencies: ``_backward_Pad`` takes ``(ograd)``.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, uniform_type

PARAMS = {
    "mode": Param("str", choices=("constant", "edge", "reflect"), doc="Padding type."),
    "pad_width": Param("shape", doc="(before, after) widths for every axis, flattened."),
    "constant_value": Param("float", 0.0, doc="The value used for constant padding."),
}


def _widths(p, ndim):
    w = p["pad_width"]
    if ndim not in (4, 5) or len(w) != 2 * ndim:
        raise MXNetError(f"Pad: expects 4-D or 5-D input with 2*ndim pad_width, got {ndim}-D and {w}")
    if any(w[:4]):
        raise MXNetError(f"Pad: padding on the first two axes must be zero, got pad_width {w}")
    return [(w[2 * i], w[2 * i + 1]) for i in range(ndim)]


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), [None]
    widths = _widths(p, len(d))
    if p["mode"] == "reflect" and any(max(a, b) >= n for (a, b), n in zip(widths, d) if n):
        raise MXNetError(f"Pad: reflect padding {p['pad_width']} must be smaller than the shape {tuple(d)}")
    return list(in_shapes), [tuple(n + a + b if n else 0 for n, (a, b) in zip(d, widths))]


def forward(octx, p, inputs, outputs, req):
    x = inputs[0]
    kw = {"constant_values": p["constant_value"]} if p["mode"] == "constant" else {}
    assign(outputs[0], req[0], np.pad(x, _widths(p, x.ndim), mode=p["mode"], **kw))


def backward(octx, p, inputs, outputs, req):
    g, dx = inputs[0], outputs[0]
    widths = _widths(p, g.ndim)
    if p["mode"] == "constant":
        assign(dx, req[0], g[tuple(slice(a, n - b) for (a, b), n in zip(widths, g.shape))])
        return
    # Where each output element came from, then one scatter-add (bincount) back to the input.
    src = np.pad(np.arange(dx.size).reshape(dx.shape), widths, mode=p["mode"])
    acc = np.bincount(src.ravel(), weights=g.ravel(), minlength=dx.size)
    assign(dx, req[0], acc.reshape(dx.shape).astype(g.dtype, copy=False))


def _backward_shape(p, in_shapes):
    g = in_shapes[0]
    if g is None:
        return list(in_shapes), [None]
    return list(in_shapes), [tuple(n - a - b for n, (a, b) in zip(g, _widths(p, len(g))))]


register(OpDef("Pad", forward, params=PARAMS, infer_shape=infer_shape, infer_type=uniform_type(1),
               gradient=lambda node, og: [entry(backward_node(node, "_backward_Pad", [og[0]]))],
               aliases=["pad"], doc=__doc__))
register(OpDef("_backward_Pad", backward, arguments=["ograd"], params=PARAMS, infer_shape=_backward_shape,
               infer_type=uniform_type(1)))
