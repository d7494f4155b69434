"""Image functions of ``mx.image``: ``imdecode``/``imread`` (RGB, HxWxC uint8), resizing and cropping.

Images are NDArrays laid out height x width x channels, as MXNet's are. Decoding goes through
OpenCV when it is installed and Pillow otherwise (mxref never writes an image codec); resizing is
numpy with OpenCV's sampling rules (``resize.py``), so it gives MXNet's pixels whichever codec
decoded them. Interpolation codes are OpenCV's: 0 nearest, 1 bilinear, 2 bicubic, 3 area,
4 Lanczos, 9 "auto" (area to shrink, bicubic to grow), 10 a random one of 0-4. (MXNet's docstrings
call 2 "area" and 3 "bicubic", but MXNet hands the code to OpenCV, where 2 is bicubic: mxref does
what MXNet does, not what its docstrings say.)
"""
from __future__ import annotations

import io as _io
import random as _random
from typing import Optional, Sequence, Tuple

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..ops.image.resample import resize
from ..recordio import _image_codec

__all__ = ["imdecode", "imread", "imresize", "resize_short", "scale_down", "fixed_crop", "center_crop",
           "random_crop", "random_size_crop", "color_normalize", "copyMakeBorder"]


def _as_numpy(src) -> np.ndarray:
    return src.asnumpy() if isinstance(src, nd.NDArray) else np.asarray(src)


def _decode(buf: bytes, flag: int, to_rgb: bool) -> np.ndarray:
    kind, lib = _image_codec()
    if kind == "cv2":
        img = lib.imdecode(np.frombuffer(buf, np.uint8), 1 if flag else 0)
        if img is None:
            raise MXNetError("imdecode: the buffer is not an image OpenCV can decode")
        if img.ndim == 2:
            img = img[:, :, None]
        elif to_rgb:
            img = img[:, :, ::-1]
        return np.ascontiguousarray(img)
    try:
        pil = lib.open(_io.BytesIO(buf))
        pil.load()
    except Exception as e:  # noqa: BLE001 - Pillow raises several types for a bad file
        raise MXNetError(f"imdecode: the buffer is not an image Pillow can decode ({e})") from None
    if not flag:
        return np.asarray(pil.convert("L"))[:, :, None].copy()
    img = np.asarray(pil.convert("RGB"))
    return np.ascontiguousarray(img if to_rgb else img[:, :, ::-1])


def imdecode(buf, flag: int = 1, to_rgb: int = 1, out=None):
    """Decode an encoded image (JPEG, PNG, ...) into an HxWxC uint8 NDArray.

    ``flag=1`` gives 3 channels, ``flag=0`` one gray channel; ``to_rgb=1`` orders channels RGB
    (``0`` keeps OpenCV's BGR).
    """
    if isinstance(buf, nd.NDArray):
        buf = buf.asnumpy().astype(np.uint8).tobytes()
    elif isinstance(buf, np.ndarray):
        buf = buf.astype(np.uint8).tobytes()
    elif not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MXNetError(f"imdecode: buf must be bytes or an NDArray of uint8, got {type(buf).__name__}")
    img = nd.array(_decode(bytes(buf), flag, bool(to_rgb)), dtype=np.uint8)
    if out is not None:
        out[:] = img
        return out
    return img


def imread(filename: str, flag: int = 1, to_rgb: int = 1, out=None):
    """Read and decode an image file into an HxWxC uint8 NDArray (see ``imdecode``)."""
    try:
        with open(filename, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise MXNetError(f"imread: cannot read {filename!r}: {e.strerror}") from None
    return imdecode(buf, flag, to_rgb, out)


def _pick_interp(interp: int, src_hw: Tuple[int, int], dst_hw: Tuple[int, int]) -> int:
    if interp == 9:              # auto: area when shrinking, bicubic when growing, bilinear otherwise
        if dst_hw[0] < src_hw[0] and dst_hw[1] < src_hw[1]:
            return 3
        if dst_hw[0] > src_hw[0] and dst_hw[1] > src_hw[1]:
            return 2
        return 1
    if interp == 10:
        return _random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise MXNetError(f"imresize: interp must be 0-4, 9 or 10 (OpenCV's codes), got {interp}")
    return interp


def _resize_numpy(img: np.ndarray, w: int, h: int, interp: int) -> np.ndarray:
    if w <= 0 or h <= 0:
        raise MXNetError(f"imresize: the target size must be positive, got w={w}, h={h}")
    return resize(img, w, h, _pick_interp(interp, img.shape[:2], (h, w)))


def imresize(src, w: int, h: int, interp: int = 1, out=None):
    """Resize an HxWxC image to ``h`` x ``w`` with OpenCV's interpolation code ``interp``."""
    img = _as_numpy(src)
    if img.ndim != 3:
        raise MXNetError(f"imresize: src must be HxWxC, got shape {img.shape}")
    res = nd.array(_resize_numpy(img, int(w), int(h), interp), dtype=img.dtype)
    if out is not None:
        out[:] = res
        return out
    return res


def resize_short(src, size: int, interp: int = 2):
    """Resize so that the shorter side is ``size``, keeping the aspect ratio."""
    h, w = src.shape[:2]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=interp)


def scale_down(src_size: Tuple[int, int], size: Tuple[int, int]) -> Tuple[int, int]:
    """Shrink the crop ``size`` (w, h) to fit in ``src_size`` (w, h), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def fixed_crop(src, x0: int, y0: int, w: int, h: int, size: Optional[Tuple[int, int]] = None,
               interp: int = 2):
    """Crop the ``w`` x ``h`` box at ``(x0, y0)``; resize it to ``size`` (w, h) when given."""
    H, W = src.shape[:2]
    if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or x0 + w > W or y0 + h > H:
        raise MXNetError(f"fixed_crop: the box x0={x0}, y0={y0}, w={w}, h={h} is not inside the "
                         f"{W}x{H} image")
    img = _as_numpy(src)[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        img = _resize_numpy(img, int(size[0]), int(size[1]), interp)
    return nd.array(img, dtype=img.dtype)


def center_crop(src, size: Tuple[int, int], interp: int = 2):
    """Crop the largest box of ``size``'s aspect ratio from the center, resized to ``size`` (w, h).

    Returns ``(image, (x0, y0, w, h))``.
    """
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_crop(src, size: Tuple[int, int], interp: int = 2):
    """Crop a box of ``size`` (scaled down to fit) at a random place. Returns ``(image, box)``."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = _random.randint(0, w - new_w), _random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_size_crop(src, size: Tuple[int, int], area, ratio: Sequence[float], interp: int = 2, **kwargs):
    """Crop a random box covering a fraction ``area`` (a number or a (min, max) range) of the image
    with aspect ratio in ``ratio`` (w/h, sampled log-uniformly), resized to ``size``; falls back to
    ``center_crop`` after 10 tries. Returns ``(image, box)``."""
    h, w = src.shape[:2]
    src_area = h * w
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    if isinstance(area, (int, float)):
        area = (area, 1.0)
    for _ in range(10):
        target = _random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        aspect = np.exp(_random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target * aspect)))
        new_h = int(round(np.sqrt(target / aspect)))
        if 0 < new_w <= w and 0 < new_h <= h:
            x0, y0 = _random.randint(0, w - new_w), _random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def color_normalize(src, mean, std=None):
    """``(src - mean) / std``, broadcast over the channels (the last axis)."""
    if mean is not None:
        src = src - mean
    if std is not None:
        src = src / std
    return src


def copyMakeBorder(src, top: int, bot: int, left: int, right: int, type: int = 0, value=0.0,  # noqa: A002,N802
                   values=None, out=None):
    """Pad an HxWxC image: ``type`` 0 constant (``value``/``values``), 1 replicate, 2 reflect,
    3 wrap, 4 reflect-101 (OpenCV's border codes)."""
    img = _as_numpy(src)
    pad = ((top, bot), (left, right), (0, 0))
    modes = {1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}
    if type == 0:
        fill = values if values is not None else value
        res = np.pad(img, pad, mode="constant")
        if np.any(np.asarray(fill) != 0):
            mask = np.ones(res.shape[:2], bool)
            mask[top:top + img.shape[0], left:left + img.shape[1]] = False
            res[mask] = np.broadcast_to(np.asarray(fill, res.dtype), (mask.sum(), res.shape[2]))
    elif type in modes:
        res = np.pad(img, pad, mode=modes[type])
    else:
        raise MXNetError(f"copyMakeBorder: type must be 0-4 (OpenCV's border codes), got {type}")
    res = nd.array(res, dtype=img.dtype)
    if out is not None:
        out[:] = res
        return out
    return res
