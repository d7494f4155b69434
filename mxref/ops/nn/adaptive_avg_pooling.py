"""contrib.AdaptiveAvgPooling2D: average pooling of NCHW data to a fixed ``output_size``.

Output bin ``o`` of an axis of input length ``I`` and output length ``O`` averages the input
positions ``[floor(o I / O), ceil((o + 1) I / O))`` (bins may overlap). ``output_size`` is ``()``
(1 x 1), one int (square) or ``(height, width)``. Math, with ``_resample.adaptive_matrix``::

    out[n, c] = Ay @ data[n, c] @ Ax^T          ddata[n, c] = Ay^T @ ograd[n, c] @ Ax

``_backward_contrib_AdaptiveAvgPooling2D`` takes ``(ograd, data)``, ``data`` for its shape only.
"""
from __future__ import annotations

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._resample import adaptive_matrix, separable, separable_t
from ._util import backward_node, entry

PARAMS = {"output_size": Param("shape", (), doc="int or (height, width).")}


def _out_hw(p):
    s = p["output_size"] or ()
    return {0: (1, 1), 1: (s[0], s[0]) if s else (1, 1), 2: tuple(s)}.get(len(s), (1, 1))


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return [None], [None]
    if len(d) != 4:
        raise MXNetError(f"AdaptiveAvgPooling2D: 'data' must be 4-D (NCHW), got shape {tuple(d)}")
    return [d], [tuple(d[:2]) + _out_hw(p)]


def forward(octx, p, inputs, outputs, req):
    x, out = inputs[0], outputs[0]
    ay, ax = (adaptive_matrix(i, o) for i, o in zip(x.shape[2:], out.shape[2:]))
    assign(out, req[0], separable(x, ay, ax).astype(x.dtype, copy=False))


def backward(octx, p, inputs, outputs, req):
    g, x = inputs
    ay, ax = (adaptive_matrix(i, o) for i, o in zip(x.shape[2:], g.shape[2:]))
    assign(outputs[0], req[0], separable_t(g, ay, ax).astype(g.dtype, copy=False))


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_contrib_AdaptiveAvgPooling2D", [ograds[0], node.inputs[0]]))]


register(OpDef("_contrib_AdaptiveAvgPooling2D", forward, params=PARAMS, infer_shape=infer_shape,
               gradient=gradient, doc=__doc__))
register(OpDef("_backward_contrib_AdaptiveAvgPooling2D", backward, arguments=["ograd", "data"],
               params=PARAMS, ignore_inputs=[1], infer_shape=lambda p, s: (list(s), [s[1]]),
               infer_type=lambda p, t: (list(t), [t[0]])))
