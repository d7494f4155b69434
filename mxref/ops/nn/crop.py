"""Crop (deprecated in MXNet for ``slice``): cut an ``(h, w)`` window out of the last two axes of NCHW data.

``Crop(data, num_args=1, h_w=(h, w))`` or ``Crop(data, crop_like, num_args=2)`` (the window takes
``crop_like``'s height and width). The window starts at ``offset = (y, x)``, or at the centre,
``((H - h) // 2, (W - w) // 2)``, with ``center_crop``::

    out[n, c, i, j] = data[n, c, y + i, x + j]
    ddata = ograd placed back into the window, zeros elsewhere;   dcrop_like = 0

``_backward_Crop`` takes ``(ograd, data)`` and reads ``data`` only for its shape.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, uniform_type

PARAMS = {
    "num_args": Param("int", doc="Number of inputs: 1 (use h_w) or 2 (use crop_like's height and width)."),
    "offset": Param("shape", (0, 0), doc="crop offset coordinate: (y, x)"),
    "h_w": Param("shape", (0, 0), doc="crop height and width: (h, w)"),
    "center_crop": Param("bool", False, doc="Crop at the centre instead of at offset."),
}


def _validate(p):
    if not 1 <= p["num_args"] <= 2:
        raise MXNetError(f"Crop: num_args must be 1 or 2, got {p['num_args']}")


def _window(p, dshape, h, w):
    """``(y, x)`` where the window starts; errors name the argument at fault."""
    H, W = dshape[2], dshape[3]
    if h > H or w > W:
        raise MXNetError(f"Crop: the crop size {(h, w)} is larger than data shape {tuple(dshape)}")
    if p["center_crop"]:
        return (H - h) // 2, (W - w) // 2
    y, x = p["offset"]
    if not (0 <= y <= H - h and 0 <= x <= W - w):
        raise MXNetError(f"Crop: offset {p['offset']} does not fit a {(h, w)} window in data shape "
                         f"{tuple(dshape)}")
    return y, x


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), [None]
    if len(d) != 4:
        raise MXNetError(f"Crop: 'data' must be 4-D (batch, channel, y, x), got shape {tuple(d)}")
    if p["num_args"] == 1:
        h, w = p["h_w"]
        if h < 1 or w < 1:
            raise MXNetError(f"Crop: h_w must be positive with one input, got {p['h_w']}")
    else:
        like = in_shapes[1]
        if like is None:
            return list(in_shapes), [None]
        if len(like) != 4:
            raise MXNetError(f"Crop: 'crop_like' must be 4-D, got shape {tuple(like)}")
        h, w = like[2], like[3]
    _window(p, d, h, w)
    return list(in_shapes), [(d[0], d[1], h, w)]


def forward(octx, p, inputs, outputs, req):
    x, out = inputs[0], outputs[0]
    y0, x0 = _window(p, x.shape, out.shape[2], out.shape[3])
    assign(out, req[0], x[:, :, y0:y0 + out.shape[2], x0:x0 + out.shape[3]])


def backward(octx, p, inputs, outputs, req):
    g, x = inputs[0], inputs[1]
    y0, x0 = _window(p, x.shape, g.shape[2], g.shape[3])
    grad = np.zeros(x.shape, g.dtype)
    grad[:, :, y0:y0 + g.shape[2], x0:x0 + g.shape[3]] = g
    assign(outputs[0], req[0], grad)


def gradient(node, ograds):
    n = backward_node(node, "_backward_Crop", [ograds[0], node.inputs[0]])
    return [entry(n)] + [None] * (len(node.inputs) - 1)


register(OpDef("Crop", forward, arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])],
               params=PARAMS, key_var_num_args="num_args", validate=_validate, infer_shape=infer_shape,
               infer_type=uniform_type(1), gradient=gradient, doc=__doc__))
register(OpDef("_backward_Crop", backward, arguments=["ograd", "data"], params=PARAMS, ignore_inputs=[1],
               infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=lambda p, t: (list(t), [t[0]])))
