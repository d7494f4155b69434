"""Colour augmenters of HWC / NHWC images: random brightness, contrast, saturation, hue, and jitter.

Math, per image, in float32, with MXNet's ``saturate_cast`` back to the dtype (uint8 clips to
[0, 255] and truncates; other dtypes are not clipped), ``a`` drawn from U[min_factor, max_factor)::

    brightness: out = x * a
    contrast:   out = x * a + (1 - a) * m,  m = mean over pixels of 0.299 R + 0.587 G + 0.114 B
                (of the single channel for grey images)
    saturation: out = x * a + (1 - a) * 0.114 * B
                (MXNet 1.9.1's loop keeps only the blue term of its grey value; grey images copy)
    hue:        RGB -> HLS (OpenCV's float formulas on x / 255), H += 360 a, HLS -> RGB (* 255)

``random_color_jitter`` shuffles the four steps (one draw), then runs each whose amount is > 0
with ``a = 1 + U[-amount, amount)`` (hue: ``a = U[-hue, hue)``). NHWC batches (which MXNet 1.9.1
refuses for these operators) draw one factor for all their images.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._common import images, need_image, saturate

_GREY = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def brightness(img, a):
    return img.astype(np.float32) * np.float32(a)


def contrast(img, a):
    x = img.astype(np.float32)
    m = (x @ _GREY).mean() if x.shape[-1] > 1 else x.mean()
    return x * np.float32(a) + np.float32((1 - a) * m)


def saturation(img, a):
    x = img.astype(np.float32)
    if x.shape[-1] == 1:
        return x
    return x * np.float32(a) + (x[..., 2:3] * _GREY[2]) * np.float32(1 - a)


def hue(img, a):
    x = img.astype(np.float32)
    if x.shape[-1] == 1:
        return x
    r, g, b = np.moveaxis(x / np.float32(255), -1, 0)
    vmax, vmin = np.maximum(np.maximum(r, g), b), np.minimum(np.minimum(r, g), b)
    diff, light = vmax - vmin, (vmax + vmin) * np.float32(0.5)
    grey = diff <= np.finfo(np.float32).eps
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = np.where(light < 0.5, diff / (vmax + vmin), diff / (2 - vmax - vmin))
        k = np.float32(60) / diff
        h = np.where(vmax == r, (g - b) * k, np.where(vmax == g, (b - r) * k + 120, (r - g) * k + 240))
    h = np.where(h < 0, h + 360, h)
    h, sat = np.where(grey, 0, h), np.where(grey, 0, sat)
    h = np.mod((h + np.float32(a) * np.float32(360)) * np.float32(1 / 60), 6).astype(np.float32)
    p2 = np.where(light <= 0.5, light * (1 + sat), light + sat - light * sat)
    p1 = 2 * light - p2
    sector = np.minimum(h.astype(int), 5)
    f = h - sector
    tab = np.stack([p2, p1, p1 + (p2 - p1) * (1 - f), p1 + (p2 - p1) * f])
    # OpenCV's sector table: which of tab[0..3] is (b, g, r) in each 60-degree sector.
    order = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])[sector]
    bgr = np.take_along_axis(tab, np.moveaxis(order, -1, 0), axis=0)
    rgb = np.where(sat == 0, light, bgr[::-1]) * np.float32(255)
    return np.moveaxis(rgb, 0, -1)


def apply(x: np.ndarray, fn, a) -> np.ndarray:
    """``fn(image, a)`` on each image of ``x``, saturated back to ``x``'s dtype."""
    out = [saturate(fn(img, a), x.dtype) for img in images(x)]
    return out[0] if x.ndim == 3 else np.stack(out)


def _image_shape(op):
    def infer(p, s):
        need_image(op, s[0])
        return s, [s[0]]
    return infer


ENHANCE = {"min_factor": Param("float", doc="Minimum factor."),
           "max_factor": Param("float", doc="Maximum factor.")}


def _validate_enhance(p):
    for k in ENHANCE:
        if p[k] < 0:
            raise MXNetError(f"random enhance: '{k}' must be >= 0, got {p[k]}")


def _random_enhance(fn):
    def forward(octx, p, inputs, outputs, req):
        a = octx.rng.uniform(p["min_factor"], p["max_factor"])
        assign(outputs[0], req[0], apply(inputs[0], fn, a))
    return forward


for _name, _fn in (("brightness", brightness), ("contrast", contrast), ("saturation", saturation),
                   ("hue", hue)):
    _op = f"_image_random_{_name}"
    register(OpDef(_op, _random_enhance(_fn), params=ENHANCE, resources=("random",),
                   infer_shape=_image_shape(_op), inplace=[(0, 0)], doc=__doc__,
                   validate=_validate_enhance))


def _color_jitter(octx, p, inputs, outputs, req):
    rng, x = octx.rng, inputs[0]
    for step in rng.permutation(4):
        name = ("brightness", "contrast", "saturation", "hue")[step]
        amount = p[name]
        if amount > 0:
            a = rng.uniform(-amount, amount) + (0 if name == "hue" else 1)
            x = apply(x, (brightness, contrast, saturation, hue)[step], a)
    assign(outputs[0], req[0], x)


register(OpDef("_image_random_color_jitter", _color_jitter, resources=("random",), inplace=[(0, 0)],
               infer_shape=_image_shape("_image_random_color_jitter"), doc=__doc__, params={
                   k: Param("float", doc=f"How much to jitter {k}.")
                   for k in ("brightness", "contrast", "saturation", "hue")}))
