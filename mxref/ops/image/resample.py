"""Image resizing in numpy with OpenCV's sampling rules, so ``imresize`` gives MXNet's (OpenCV's) pixels.

Every filter is separable: the output is ``Wy @ image @ Wx.T`` per channel, where row ``i`` of
``Wx`` holds the weights of the source columns that output column ``i`` reads. The rules:

- nearest (0): source ``floor(i * scale)`` (OpenCV does not centre nearest-neighbour sampling);
- bilinear (1), bicubic (2), Lanczos (4): the output pixel's centre maps to source
  ``(i + 0.5) * scale - 0.5``; taps beyond the border repeat the edge pixel; bicubic is Keys'
  kernel with ``a = -0.75`` (OpenCV's), Lanczos has 8 taps;
- area (3): when shrinking, each output pixel averages the source pixels its footprint
  ``[i * scale, (i + 1) * scale)`` covers, weighted by overlap; when growing, OpenCV uses bilinear
  weights that do not blur, and so does this.

``scale = source size / output size``. The codes are OpenCV's constants (``INTER_CUBIC`` is 2,
``INTER_AREA`` is 3), which MXNet passes straight through; MXNet's docstrings swap 2 and 3.
uint8 results are rounded to nearest and saturated.
"""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["resize", "resize_transpose"]


def _clamp_taps(index: np.ndarray, size: int) -> np.ndarray:
    return np.clip(index, 0, size - 1)


def _scatter(rows, taps, weights, n_out, n_in) -> np.ndarray:
    w = np.zeros((n_out, n_in))
    np.add.at(w, (rows, _clamp_taps(taps, n_in)), weights)
    return w


def _nearest(n_out: int, n_in: int) -> np.ndarray:
    src = np.minimum(np.floor(np.arange(n_out) * (n_in / n_out)).astype(int), n_in - 1)
    return _scatter(np.arange(n_out), src, np.ones(n_out), n_out, n_in)


def _kernel_weights(n_out: int, n_in: int, taps: int, kernel) -> np.ndarray:
    centre = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    base = np.floor(centre).astype(int)
    frac = centre - base
    offsets = np.arange(-(taps // 2) + 1, taps // 2 + 1)            # e.g. -1, 0, 1, 2 for 4 taps
    weights = kernel(frac[:, None] - offsets[None, :])
    weights /= weights.sum(axis=1, keepdims=True)
    rows = np.repeat(np.arange(n_out), taps)
    return _scatter(rows, (base[:, None] + offsets[None, :]).ravel(), weights.ravel(), n_out, n_in)


def _linear(n_out: int, n_in: int) -> np.ndarray:
    centre = np.maximum((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0.0)   # OpenCV clamps at 0
    base = np.floor(centre).astype(int)
    frac = centre - base
    rows = np.arange(n_out)
    return (_scatter(rows, base, 1 - frac, n_out, n_in) + _scatter(rows, base + 1, frac, n_out, n_in))


def _cubic(x: np.ndarray, a: float = -0.75) -> np.ndarray:
    x = np.abs(x)
    return np.where(x <= 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))


def _lanczos4(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 4, np.sinc(x) * np.sinc(x / 4), 0.0)


def _area(n_out: int, n_in: int) -> np.ndarray:
    if n_out >= n_in:
        return _linear(n_out, n_in)
    scale = n_in / n_out
    lo = np.arange(n_out) * scale
    hi = lo + scale
    src = np.arange(n_in)
    overlap = np.minimum(hi[:, None], src[None, :] + 1) - np.maximum(lo[:, None], src[None, :])
    overlap = np.clip(overlap, 0, None)
    return overlap / scale


_FILTERS = {0: _nearest, 1: _linear, 3: _area,
            2: lambda o, i: _kernel_weights(o, i, 4, _cubic),
            4: lambda o, i: _kernel_weights(o, i, 8, _lanczos4)}


@functools.lru_cache(maxsize=512)
def _weights(interp: int, n_out: int, n_in: int) -> np.ndarray:
    # cached: an image pipeline resizes many images between the same few sizes, and building the
    # matrix (np.add.at) costs more than applying it to a small image
    w = _FILTERS[interp](n_out, n_in)
    w.flags.writeable = False
    return w


def resize(img: np.ndarray, w: int, h: int, interp: int) -> np.ndarray:
    """Resize an HxWxC array to ``h`` x ``w`` with OpenCV's interpolation code ``interp`` (0-4)."""
    wy = _weights(interp, h, img.shape[0])
    wx = _weights(interp, w, img.shape[1])
    # rows then columns as two 2-D BLAS products (einsum's path search, or a batched matmul, costs
    # more than the arithmetic on a small image)
    src = img.astype(np.float64)
    rows = (wy @ src.reshape(src.shape[0], -1)).reshape(h, src.shape[1], -1)          # (h, W, C)
    cols = wx @ rows.transpose(1, 0, 2).reshape(src.shape[1], -1)                      # (w, h*C)
    out = cols.reshape(w, h, -1).transpose(1, 0, 2)
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(img.dtype)
    return out.astype(img.dtype)


def resize_transpose(grad: np.ndarray, h_in: int, w_in: int, interp: int) -> np.ndarray:
    """The adjoint of ``resize`` (its gradient): an h x w x C gradient back to ``h_in`` x ``w_in``."""
    wy = _FILTERS[interp](grad.shape[0], h_in)
    wx = _FILTERS[interp](grad.shape[1], w_in)
    return np.einsum("ij,ilc,lk->jkc", wy, grad.astype(np.float64), wx, optimize=True).astype(grad.dtype)
