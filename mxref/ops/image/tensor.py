"""``to_tensor`` (HWC uint8 -> CHW float32 in [0, 1]) and ``normalize`` ((x - mean) / std per channel).

Math::

    to_tensor(x)[..., c, h, w] = x[..., h, w, c] / 255                (output float32)
    normalize(x)[..., c, :, :] = (x[..., c, :, :] - mean[c]) / std[c]  (CHW or NCHW)

``mean``/``std`` hold one value for all channels or one per channel. Gradients:
``dx = transpose(g) / 255`` and ``dx = g / std[c]``. (MXNet 1.9.1 passes ``g`` through unchanged
for ``to_tensor``, which has the wrong shape; mxref gives the true derivative.)
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._common import backward_same, need_image


def _to_tensor_shape(p, s):
    need_image("_image_to_tensor", s[0])
    if s[0] is None:
        return s, [None]
    x = s[0]
    return s, [x[:-3] + (x[-1], x[-3], x[-2])]


def _to_tensor(octx, p, inputs, outputs, req):
    x = inputs[0]
    axes = (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)
    assign(outputs[0], req[0], np.transpose(x, axes).astype(np.float32) / np.float32(255))


def _to_tensor_backward(octx, p, inputs, outputs, req):
    g = inputs[0]
    axes = (1, 2, 0) if g.ndim == 3 else (0, 2, 3, 1)
    assign(outputs[0], req[0], np.transpose(g, axes) / np.float32(255))


register(OpDef("_image_to_tensor", _to_tensor, infer_shape=_to_tensor_shape,
               infer_type=lambda p, t: (t, [np.dtype(np.float32)]),
               gradient=backward_same("_backward_image_to_tensor"), doc=__doc__))
register(OpDef("_backward_image_to_tensor", _to_tensor_backward, arguments=("ograd",),
               infer_shape=lambda p, s: (s, [None if s[0] is None else
                                             s[0][:-3] + (s[0][-2], s[0][-1], s[0][-3])]),
               infer_type=lambda p, t: (t, [np.dtype(np.float32)])))

NORM_PARAMS = {
    "mean": Param("float_tuple", (0.0, 0.0, 0.0, 0.0), doc="Sequence of means for each channel."),
    "std": Param("float_tuple", (1.0, 1.0, 1.0, 1.0), doc="Standard deviation of each channel."),
}


def _per_channel(p, name, channels):
    v = p[name]
    if len(v) == 1:
        v = v * channels
    return np.asarray(v[:channels], dtype=np.float64).reshape(channels, 1, 1)


def _normalize_shape(p, s):
    need_image("_image_normalize", s[0], "CHW")
    if s[0] is not None:
        c = s[0][-3]
        if c not in (1, 3):
            raise MXNetError(f"_image_normalize: the channel dimension of 'data' must be 1 or 3, "
                             f"got shape {tuple(s[0])}")
        for name in ("mean", "std"):
            default = p[name] == NORM_PARAMS[name].default     # four values: any channel count
            if len(p[name]) not in (1, c) and not default:
                raise MXNetError(f"_image_normalize: '{name}' must have 1 or {c} elements for data of "
                                 f"shape {tuple(s[0])}, got {p[name]}")
    return s, [s[0]]


def _normalize(octx, p, inputs, outputs, req):
    x = inputs[0]
    c = x.shape[-3]
    y = (x - _per_channel(p, "mean", c)) / _per_channel(p, "std", c)
    assign(outputs[0], req[0], y.astype(x.dtype))


def _normalize_backward(octx, p, inputs, outputs, req):
    g = inputs[0]
    assign(outputs[0], req[0], (g / _per_channel(p, "std", g.shape[-3])).astype(g.dtype))


register(OpDef("_image_normalize", _normalize, params=NORM_PARAMS, infer_shape=_normalize_shape,
               gradient=backward_same("_backward_image_normalize"), inplace=[(0, 0)], doc=__doc__))
register(OpDef("_backward_image_normalize", _normalize_backward, arguments=("ograd",),
               params=NORM_PARAMS, inplace=[(0, 0)]))
