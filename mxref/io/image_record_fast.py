"""ImageRecordIter's fast per-record path: JPEG through Pillow's C decoder, then one C loop
(``mxref/_ext/image_kernels.pyx``) resizes, crops, mirrors and normalises into the batch.

The reference path (``ImageRecordIter._augment`` + ``_normalize``) opens each image with
``PIL.Image.open``, whose JPEG plugin parses the markers in Python, and runs about ten numpy calls
per image; on small images that Python time, which holds the GIL, is most of the work and the
decode threads queue on it. Here ``Image.frombytes(..., "jpeg")`` decodes with the same libjpeg
call given the size read from the frame header, and the kernel applies the same separable resize
weights (``resample._weights``) restricted to the crop's rows and columns, so the pixels are the
reference's. Anything else (PNG, CMYK or Adobe-transformed JPEG, OpenCV installed, two resizes)
takes the reference path.
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


def decode(payload: bytes, channels: int) -> np.ndarray:
    """HxWxC uint8 RGB (or gray), the same pixels as ``image._decode(payload, flag, True)``."""
    kind, pil = _image_codec()
    frame = jpeg_frame(payload) if kind != "cv2" else None
    if frame is None:
        return _decode(payload, 1 if channels == 3 else 0, True)
    w, h, comps = frame
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


@functools.lru_cache(maxsize=64)
def _identity(n: int) -> np.ndarray:
    """The weights of "no resize" (each output pixel reads one source pixel, times 1.0)."""
    eye = np.eye(n)
    eye.flags.writeable = False
    return eye


def crop_into(img: np.ndarray, size: Tuple[int, int], interp: Optional[int], y: int, x: int,
              mirror: bool, mean: np.ndarray, mult: np.ndarray, out: np.ndarray) -> None:
    """Resize ``img`` to ``size`` (``(h, w)``; ``interp`` None: no resize), take the ``out``-sized
    crop at ``(y, x)``, mirror it, normalise it into ``out`` (CxHxW float32)."""
    (nh, nw), (ih, iw) = size, img.shape[:2]
    wy = _weights(interp, nh, ih) if interp is not None else _identity(ih)
    wx = _weights(interp, nw, iw) if interp is not None else _identity(iw)
    C.resize_crop_normalize(img, wy, wx, y, x, int(mirror), mean, mult, out)
