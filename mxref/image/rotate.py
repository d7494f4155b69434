"""``imrotate`` / ``random_rotate``: rotate CHW / NCHW float32 images about their centre, in numpy.

As MXNet does it: a grid of output pixel positions centred on the image, ``(w - (W-1)/2, h - (H-1)/2)``,
is rotated by the angle, divided by ``((W-1)/2, (H-1)/2)`` (so rotation keeps the aspect ratio),
optionally scaled (``zoom_in``: no padding shows; ``zoom_out``: the whole image stays), and
sampled bilinearly with zeros outside the image (``BilinearSampler``'s rule).
"""
from __future__ import annotations

from numbers import Number

import numpy as np

from .. import ndarray as nd

__all__ = ["imrotate", "random_rotate"]


def _bilinear_zero_pad(img: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Sample CHW ``img`` at pixel coordinates ``(xs, ys)``; taps outside the image count as 0."""
    c, h, w = img.shape
    x0, y0 = np.floor(xs).astype(int), np.floor(ys).astype(int)
    fx, fy = xs - x0, ys - y0
    out = np.zeros((c,) + xs.shape, dtype=np.float64)
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            yy, xx = y0 + dy, x0 + dx
            inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            tap = img[:, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
            out += tap * (wy * wx * inside)
    return out


def _zoom(h: int, w: int, rad: float, zoom_in: bool, zoom_out: bool) -> float:
    if not (zoom_in or zoom_out):
        return 1.0
    rho, corner = np.hypot(h, w), np.arctan(h / w)
    max_x = max(abs(rho * np.cos(corner + abs(rad))), abs(rho * np.cos(corner - abs(rad))))
    max_y = max(abs(rho * np.sin(corner + abs(rad))), abs(rho * np.sin(corner - abs(rad))))
    return max(max_x / w, max_y / h) if zoom_out else min(w / max_x, h / max_y)


def _rotate_one(img: np.ndarray, degrees: float, zoom_in: bool, zoom_out: bool) -> np.ndarray:
    _, h, w = img.shape
    rad = np.pi * degrees / 180
    hs, ws = (h - 1) / 2, (w - 1) / 2
    hh, ww = np.meshgrid(np.arange(h) - hs, np.arange(w) - ws, indexing="ij")
    scale = _zoom(h, w, rad, zoom_in, zoom_out)
    gx = (ww * np.cos(rad) - hh * np.sin(rad)) / ws * scale      # normalised to [-1, 1]
    gy = (ww * np.sin(rad) + hh * np.cos(rad)) / hs * scale
    return _bilinear_zero_pad(img, (gx + 1) * ws, (gy + 1) * hs)


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotate ``src`` (CHW or NCHW float32) by ``rotation_degrees`` (one number, or one per image)."""
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if src.dtype != np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    x = src.asnumpy()
    if x.ndim == 3:
        if not isinstance(rotation_degrees, Number):
            raise TypeError("When a single image is passed the rotation angle is required to be a scalar.")
        return nd.array(_rotate_one(x, rotation_degrees, zoom_in, zoom_out), ctx=src.context)
    if x.ndim != 4:
        raise ValueError("Only 3D and 4D are supported by this function")
    angles = ([rotation_degrees] * len(x) if isinstance(rotation_degrees, Number)
              else np.asarray(getattr(rotation_degrees, "asnumpy", lambda: rotation_degrees)()).ravel())
    if len(angles) != len(x):
        raise ValueError("The number of images must be equal to the number of rotation angles")
    out = np.stack([_rotate_one(img, float(a), zoom_in, zoom_out) for img, a in zip(x, angles)])
    return nd.array(out, ctx=src.context)


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """Rotate each image by an angle drawn from ``U[angle_limits]`` (numpy's global RNG, as MXNet)."""
    if src.ndim == 3:
        angles = np.random.uniform(*angle_limits)
    else:
        angles = np.random.uniform(*angle_limits, size=src.shape[0])
    return imrotate(src, angles, zoom_in=zoom_in, zoom_out=zoom_out)
