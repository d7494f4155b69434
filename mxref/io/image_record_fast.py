"""ImageRecordIter's per-record path: a JPEG decoded by libjpeg straight into a numpy buffer, then
one C loop (``mxref/_ext/image_kernels.pyx``) resizes, crops, mirrors and normalises into the batch.

``decode`` reads a JPEG's size from its frame header and runs Pillow's libjpeg decoder
(``Image.core.jpeg_decoder``) on a Pillow image mapped over a fresh numpy buffer
(``Image.core.map_buffer``): no Pillow image to allocate and copy out, no Python marker parsing,
and Pillow releases the GIL while libjpeg works. RGB lands as Pillow's 4-byte RGBX pixels, so the
result is a strided RGB view, which the C loop reads as it is. PNG, CMYK or Adobe-transformed
JPEG, a colour/gray conversion, an installed OpenCV (then ``cv2.imdecode``) or a Pillow without
those entry points take the general reader (``image._decode``): the same pixels.

``crop_into`` applies the separable resize weights (``resample._weights``) as compact taps,
only for the crop's rows and columns: sums in double precision tap by tap, rounding half to even,
saturation, then ``(pixel - mean) * mult`` in float32. Its numpy twin (pure mode) does the same
operations in the same order, so both give the same bits; ``resample.resize`` (BLAS products)
can round an upscaled pixel one level the other way.
"""
from __future__ import annotations

import functools
import struct
from typing import Optional, Tuple

import numpy as np

from .._ext import loader
from ..image.image import _decode
from ..ops.image.resample import _weights
from ..recordio import _image_codec

C = loader.load("image_kernels", "ImageRecordIter resize/crop/normalize")

_FRAME_MARKERS = (0xC0, 0xC1, 0xC2)       # baseline, extended and progressive Huffman frames
_ADOBE = 0xEE                             # APP14: colour transform flags Pillow's plugin reads


def jpeg_frame(data: bytes) -> Optional[Tuple[int, int, int]]:
    """``(width, height, components)`` from a JPEG's frame header, or None when the file is not a
    plain 1- or 3-component Huffman JPEG (then Pillow's full plugin must read it)."""
    if data[:2] != b"\xff\xd8":
        return None
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:                # fill byte
            i += 1
            continue
        length = struct.unpack_from(">H", data, i + 2)[0]
        if marker == _ADOBE:
            return None
        if marker in _FRAME_MARKERS and i + 10 <= n:
            h, w = struct.unpack_from(">HH", data, i + 5)
            comps = data[i + 9]
            return (w, h, comps) if comps in (1, 3) and w and h else None
        if 0xC3 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return None                   # lossless / arithmetic frames
        i += 2 + length
    return None


@functools.lru_cache(maxsize=None)
def _pil_core():
    """Pillow's C entry points that decode a JPEG straight into a caller's buffer
    (``map_buffer`` + ``jpeg_decoder``), or None when this Pillow lacks them."""
    try:
        from PIL import Image
    except ImportError:
        return None
    core = getattr(Image, "core", None)
    if core is None or not hasattr(core, "map_buffer") or not hasattr(core, "jpeg_decoder"):
        return None
    return core


def decode(payload: bytes, channels: int) -> np.ndarray:
    """HxWxC uint8 RGB (or gray), the same pixels as ``image._decode(payload, flag, True)``.

    A plain JPEG whose component count matches ``channels`` is decoded by libjpeg straight into a
    new numpy buffer (RGB as Pillow's 4-byte RGBX pixels, so the result is a strided RGB view of
    it; Pillow releases the GIL while it decodes); any other file goes through Pillow's or OpenCV's
    full reader, converted as the reference converts.
    """
    kind, pil = _image_codec()
    frame = jpeg_frame(payload) if kind != "cv2" and C is not None else None   # pure: the reader
    if frame is None:
        return _decode(payload, 1 if channels == 3 else 0, True)
    w, h, comps = frame
    core = _pil_core()         # cached; looked up on first use so that import mxref needs no Pillow
    if core is not None and comps == channels:
        mode = "RGBX" if comps == 3 else "L"
        buf = np.empty((h, w, 4 if comps == 3 else 1), np.uint8)
        try:
            im = core.map_buffer(buf, (w, h), "raw", 0, (mode, 0, 1))
            dec = core.jpeg_decoder(mode, "RGB" if comps == 3 else "L", "")
            dec.setimage(im, (0, 0, w, h))
            done, err = dec.decode(payload)
        except Exception:  # noqa: BLE001 - an unexpected Pillow: the general path below
            done, err = 0, -1
        if done < 0 and err >= 0:        # finished without error (n >= 0: truncated, wants more)
            return buf[:, :, :3] if comps == 3 else buf
    mode = "RGB" if comps == 3 else "L"
    try:
        img = pil.frombytes(mode, (w, h), payload, "jpeg", mode, "")
    except Exception:  # noqa: BLE001 - leave odd files to the plugin (and its error message)
        return _decode(payload, 1 if channels == 3 else 0, True)
    want = "RGB" if channels == 3 else "L"
    if mode != want:
        img = img.convert(want)
    arr = np.asarray(img)
    return arr if arr.ndim == 3 else arr[:, :, None]


@functools.lru_cache(maxsize=512)
def _taps(interp: Optional[int], n_out: int, n_in: int) -> Tuple[np.ndarray, np.ndarray]:
    """The resize weights as taps: ``(lo, w)`` with output ``i`` reading source ``lo[i] ..
    lo[i] + T - 1`` weighted by ``w[i]`` (the dense row's non-zero span, zero-padded to a common
    ``T``, kept inside ``0 .. n_in - 1``); ``interp`` None: no resize (one tap of 1.0)."""
    dense = _weights(interp, n_out, n_in) if interp is not None else np.eye(n_in)
    nz = dense != 0
    first = np.where(nz.any(1), nz.argmax(1), 0)
    last = np.where(nz.any(1), n_in - nz[:, ::-1].argmax(1), 1)
    taps = int((last - first).max())
    lo = np.minimum(first, n_in - taps).astype(np.intp)
    w = np.ascontiguousarray(dense[np.arange(n_out)[:, None], lo[:, None] + np.arange(taps)])
    lo.flags.writeable = w.flags.writeable = False
    return lo, w


def crop_into(img: np.ndarray, size: Tuple[int, int], interp: Optional[int], y: int, x: int,
              mirror: bool, mean: np.ndarray, mult: np.ndarray, out: np.ndarray) -> None:
    """Resize ``img`` to ``size`` (``(h, w)``; ``interp`` None: no resize), take the ``out``-sized
    crop at ``(y, x)``, mirror it, normalise it into ``out`` (CxHxW float32): one C loop, or its
    numpy twin in pure mode."""
    (nh, nw), (ih, iw) = size, img.shape[:2]
    ylo, wy = _taps(interp, nh, ih)
    xlo, wx = _taps(interp, nw, iw)
    if C is not None:
        C.resize_crop_normalize(img, ylo, wy, xlo, wx, y, x, int(mirror), mean, mult, out)
        return
    # the numpy twin: the same products, summed in the same order (tap by tap, from 0), rounded
    # half to even and saturated, then normalised in float32
    h, w = out.shape[1:]
    r = np.arange(y, y + h)
    cols = np.arange(x, x + w)[::-1] if mirror else np.arange(x, x + w)
    src = img.astype(np.float64)
    rows = np.zeros((h, iw, img.shape[2]))
    for t in range(wy.shape[1]):
        rows += wy[r, t][:, None, None] * src[ylo[r] + t]
    acc = np.zeros((h, w, img.shape[2]))
    for t in range(wx.shape[1]):
        acc += wx[cols, t][None, :, None] * rows[:, xlo[cols] + t]
    px = np.rint(np.clip(acc, 0, 255)).astype(np.float32)
    out[...] = ((px - mean) * mult).transpose(2, 0, 1)
