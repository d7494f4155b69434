"""Shared rules of the image operators: layout checks, per-image loops and MXNet's saturation."""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..nn._util import backward_node, entry


def need_image(op: str, shape, layout: str = "HWC") -> None:
    """``shape`` must be 3-D (one image) or 4-D (a batch), as every image operator asks."""
    if shape is not None and len(shape) not in (3, 4):
        raise MXNetError(f"{op}: input 'data' must be {layout} (3-D) or N{layout} (4-D), "
                         f"got shape {tuple(shape)}")


def images(x: np.ndarray):
    """The HWC images of a 3-D or 4-D array (views, so a kernel may write through them)."""
    return [x] if x.ndim == 3 else list(x)


def saturate(value: np.ndarray, dtype) -> np.ndarray:
    """MXNet's ``saturate_cast`` from float: uint8 clips to [0, 255] and truncates; others cast."""
    if np.dtype(dtype) == np.uint8:
        return np.clip(value, 0, 255).astype(np.uint8)
    return value.astype(dtype)


def backward_same(op_name: str):
    """Gradient builder: one ``op_name`` node over the output gradient (a linear map)."""
    def gradient(node, ograds):
        return [entry(backward_node(node, op_name, [ograds[0]]))]
    return gradient
