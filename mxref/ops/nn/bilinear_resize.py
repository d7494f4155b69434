"""contrib.BilinearResize2D: resize the last two axes of NCHW data by bilinear interpolation.

The output size comes from ``mode``: ``'size'`` (``height``/``width``, or the input size times
``scale_height``/``scale_width`` when given), ``'odd_scale'`` (an odd size ``s`` becomes
``(s - 1) * scale + 1``), ``'like'`` (the height and width of the second input ``like``), and
``'to_even_down'``/``'to_even_up'``/``'to_odd_down'``/``'to_odd_up'`` (the nearest even/odd size).
Math, with the matrices of ``_resample.resize_matrix``::

    out[n, c] = Wy @ data[n, c] @ Wx^T          ddata[n, c] = Wy^T @ ograd[n, c] @ Wx     dlike = 0

``_backward_contrib_BilinearResize2D`` takes ``(ograd, data)`` (plus ``like``), both for shapes only.
"""
from __future__ import annotations

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._resample import resize_matrix, separable, separable_t
from ._util import backward_node, entry

MODES = ("like", "odd_scale", "size", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up")
PARAMS = {
    "height": Param("int", 1, doc="output height (ignored if scale_height is given or mode is not 'size')"),
    "width": Param("int", 1, doc="output width (ignored if scale_width is given or mode is not 'size')"),
    "scale_height": Param("float_or_none", None, doc="sampling scale of the height"),
    "scale_width": Param("float_or_none", None, doc="sampling scale of the width"),
    "mode": Param("str", "size", choices=MODES, doc="resizing mode"),
    "align_corners": Param("bool", True, doc="Map the corner pixel centres onto each other."),
}


def _need_scales(p):
    if p["scale_height"] is None or p["scale_width"] is None:
        raise MXNetError(f"BilinearResize2D: mode '{p['mode']}' with scales needs both scale_height "
                         f"and scale_width, got {p['scale_height']} and {p['scale_width']}")


def _out_hw(p, d, like):
    H, W, mode = d[2], d[3], p["mode"]
    if mode == "size":
        if p["scale_height"] is None:
            return p["height"], p["width"]
        _need_scales(p)
        return int(p["scale_height"] * H), int(p["scale_width"] * W)
    if mode == "odd_scale":
        _need_scales(p)
        return tuple(int(s * sc) if s % 2 == 0 else int((s - 1) * sc) + 1
                     for s, sc in ((H, p["scale_height"]), (W, p["scale_width"])))
    if mode == "like":
        return like[2], like[3]
    want_odd, up = mode.startswith("to_odd"), mode.endswith("up")
    return tuple(s if (s % 2 == 1) == want_odd else (s + 1 if up else s - 1) for s in (H, W))


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None or (p["mode"] == "like" and in_shapes[1] is None):
        return list(in_shapes), [None]
    for name, s in zip(("data", "like"), in_shapes):
        if len(s) != 4:
            raise MXNetError(f"BilinearResize2D: '{name}' must be 4-D (NCHW), got shape {tuple(s)}")
    h, w = _out_hw(p, d, in_shapes[-1])
    if h < 1 or w < 1:
        raise MXNetError(f"BilinearResize2D: output size {(h, w)} from data shape {tuple(d)} is empty")
    return list(in_shapes), [(d[0], d[1], h, w)]


def _arguments(p):
    return ["data", "like"] if p["mode"] == "like" else ["data"]


def _matrices(p, in_hw, out_hw):
    return [resize_matrix(i, o, p["align_corners"]) for i, o in zip(in_hw, out_hw)]


def forward(octx, p, inputs, outputs, req):
    x, out = inputs[0], outputs[0]
    wy, wx = _matrices(p, x.shape[2:], out.shape[2:])
    assign(out, req[0], separable(x, wy, wx).astype(x.dtype, copy=False))


def backward(octx, p, inputs, outputs, req):
    g, x = inputs[0], inputs[1]
    wy, wx = _matrices(p, x.shape[2:], g.shape[2:])
    assign(outputs[0], req[0], separable_t(g, wy, wx).astype(g.dtype, copy=False))
    if len(outputs) > 1:
        assign(outputs[1], req[1], 0)


def gradient(node, ograds):
    n = backward_node(node, "_backward_contrib_BilinearResize2D", [ograds[0]] + list(node.inputs))
    return [entry(n, i) for i in range(len(node.inputs))]


register(OpDef("_contrib_BilinearResize2D", forward, arguments=_arguments, params=PARAMS,
               infer_shape=infer_shape, infer_type=lambda p, t: (list(t), [t[0]]), gradient=gradient,
               doc=__doc__))
register(OpDef("_backward_contrib_BilinearResize2D", backward, params=PARAMS, ignore_inputs=[1],
               arguments=lambda p: ["ograd"] + _arguments(p),
               outputs=lambda p: [a + "_grad" for a in _arguments(p)],
               infer_shape=lambda p, s: (list(s), list(s[1:])),
               infer_type=lambda p, t: (list(t), list(t[1:]))))
