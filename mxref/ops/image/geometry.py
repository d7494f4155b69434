"""``resize``, ``crop`` and the (random) left-right / top-bottom flips of HWC or NHWC images.

Math::

    resize(x, size=(w, h))  : each image resampled with OpenCV's rules (``resample.py``, as imresize)
    crop(x, x0, y0, w, h)   = x[..., y0:y0+h, x0:x0+w, :]   (gradient: g pasted into zeros)
    flip_left_right(x)      = x[..., :, ::-1, :]        flip_top_bottom(x) = x[..., ::-1, :, :]

``resize``'s ``size`` is ``(w, h)`` or one number: both sides, or with ``keep_ratio`` the short
side (the long one scaled and truncated); its gradient is the resampling's transpose (float
images; MXNet 1.9.1 declares a pass-through). The random flips flip with probability 1/2, one draw
for the whole input. A flip's gradient is the same flip of ``g`` (MXNet 1.9.1 passes ``g``
through unflipped); a random flip's gradient flips ``g`` exactly when forward did.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..nn._util import backward_node, entry
from ..registry import OpDef, Param, assign, register
from ._common import backward_same, images, need_image
from .resample import resize as _resample
from .resample import resize_transpose

_AXES = {"left_right": -2, "top_bottom": -3}


def _resize_hw(p, h, w):
    size = p["size"]
    if len(size) not in (1, 2) or min(size) <= 0:
        raise MXNetError(f"_image_resize: 'size' must be 1 or 2 positive numbers, got {size}")
    if len(size) == 2:
        return size[1], size[0]
    if not p["keep_ratio"]:
        return size[0], size[0]
    return (h * size[0] // w, size[0]) if h > w else (size[0], w * size[0] // h)


def _resize_shape(p, s):
    need_image("_image_resize", s[0])
    if s[0] is None:
        return s, [None]
    h, w = _resize_hw(p, s[0][-3], s[0][-2])
    return s, [s[0][:-3] + (h, w, s[0][-1])]


def _resize(octx, p, inputs, outputs, req):
    x = inputs[0]
    h, w = _resize_hw(p, x.shape[-3], x.shape[-2])
    out = [_resample(img, w, h, p["interp"]) for img in images(x)]
    assign(outputs[0], req[0], out[0] if x.ndim == 3 else np.stack(out))


def _resize_backward(octx, p, inputs, outputs, req):
    g, x = inputs
    h, w = x.shape[-3], x.shape[-2]
    out = [resize_transpose(gi, h, w, p["interp"]) for gi in images(g)]
    assign(outputs[0], req[0], out[0] if g.ndim == 3 else np.stack(out))


def _resize_gradient(node, ograds):
    return [entry(backward_node(node, "_backward_image_resize", [ograds[0], node.inputs[0]]))]


RESIZE_PARAMS = {
    "size": Param("shape", (), doc="Size of new image. Could be (width, height) or (size)"),
    "keep_ratio": Param("bool", False, doc="Resize the short edge to `size` when `size` is one number."),
    "interp": Param("int", 1, choices=(0, 1, 2, 3, 4), doc="OpenCV interpolation code (0-4)."),
}
register(OpDef("_image_resize", _resize, infer_shape=_resize_shape, doc=__doc__, params=RESIZE_PARAMS,
               gradient=_resize_gradient))
register(OpDef("_backward_image_resize", _resize_backward, arguments=("ograd", "data"),
               params=RESIZE_PARAMS, infer_shape=lambda p, s: (s, [s[1]]),
               infer_type=lambda p, t: (t, [t[0]]), ignore_inputs=(1,)))


def _crop_shape(p, s):
    need_image("_image_crop", s[0])
    if s[0] is None:
        return s, [None]
    h, w = s[0][-3], s[0][-2]
    if p["x"] < 0 or p["y"] < 0 or p["x"] + p["width"] > w or p["y"] + p["height"] > h \
            or p["width"] <= 0 or p["height"] <= 0:
        raise MXNetError(f"_image_crop: the area x={p['x']}, y={p['y']}, width={p['width']}, "
                         f"height={p['height']} does not lie inside 'data' of shape {tuple(s[0])}")
    return s, [s[0][:-3] + (p["height"], p["width"], s[0][-1])]


def _crop(octx, p, inputs, outputs, req):
    x0, y0 = p["x"], p["y"]
    assign(outputs[0], req[0], inputs[0][..., y0:y0 + p["height"], x0:x0 + p["width"], :])


def _crop_backward(octx, p, inputs, outputs, req):
    g = np.zeros(inputs[1].shape, dtype=inputs[0].dtype)      # zeros, the crop's gradient pasted in
    g[..., p["y"]:p["y"] + p["height"], p["x"]:p["x"] + p["width"], :] = inputs[0]
    assign(outputs[0], req[0], g)


def _crop_gradient(node, ograds):
    return [entry(backward_node(node, "_backward_image_crop", [ograds[0], node.inputs[0]]))]


CROP_PARAMS = {
    "x": Param("int", doc="Left boundary of the cropping area."),
    "y": Param("int", doc="Top boundary of the cropping area."),
    "width": Param("int", doc="Width of the cropping area."),
    "height": Param("int", doc="Height of the cropping area."),
}
register(OpDef("_image_crop", _crop, infer_shape=_crop_shape, doc=__doc__, params=CROP_PARAMS,
               gradient=_crop_gradient))
register(OpDef("_backward_image_crop", _crop_backward, arguments=("ograd", "data"), params=CROP_PARAMS,
               infer_shape=lambda p, s: (s, [s[1]]), infer_type=lambda p, t: (t, [t[1]]),
               ignore_inputs=(1,)))


def _image_shape(op):
    def infer(p, s):
        need_image(op, s[0])
        return s, [s[0]]
    return infer


def _flip_kernel(axis):
    def forward(octx, p, inputs, outputs, req):
        assign(outputs[0], req[0], np.flip(inputs[0], axis).copy())
    return forward


def _random_flip_kernel(axis):
    def forward(octx, p, inputs, outputs, req):
        flip = bool(octx.rng.random() < 0.5)
        outputs[1][...] = flip
        x = inputs[0]
        assign(outputs[0], req[0], np.flip(x, axis).copy() if flip else x)
    return forward


def _random_flip_backward(axis):
    def backward(octx, p, inputs, outputs, req):
        g, flipped = inputs
        assign(outputs[0], req[0], np.flip(g, axis).copy() if flipped.item() else g)
    return backward


def _random_flip_gradient(name):
    def gradient(node, ograds):
        return [entry(backward_node(node, "_backward" + name, [ograds[0], entry(node, 1)]))]
    return gradient


for _side, _axis in _AXES.items():
    _name = f"_image_flip_{_side}"
    register(OpDef(_name, _flip_kernel(_axis), infer_shape=_image_shape(_name), inplace=[(0, 0)],
                   gradient=backward_same(_name), doc=__doc__))
    _rname = f"_image_random_flip_{_side}"
    register(OpDef(_rname, _random_flip_kernel(_axis), outputs=("output", "flipped"),
                   num_visible_outputs=1, resources=("random",), doc=__doc__,
                   infer_shape=lambda p, s, _n=_rname: (_image_shape(_n)(p, s)[0], [s[0], (1,)]),
                   infer_type=lambda p, t: (t, [t[0], np.dtype(np.float32)]),
                   gradient=_random_flip_gradient(_rname)))
    register(OpDef("_backward" + _rname, _random_flip_backward(_axis), arguments=("ograd", "flipped"),
                   infer_shape=lambda p, s: (s, [s[0]]), infer_type=lambda p, t: (t, [t[0]])))
