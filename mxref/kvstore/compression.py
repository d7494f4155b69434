"""2-bit gradient compression with residual feedback, bit-compatible with MXNet's ``2bit`` scheme.

The math, per element ``i`` of a float32 gradient ``g`` with threshold ``t > 0`` and a residual
``r`` that the sender keeps between pushes (it starts at zero)::

    r_i += g_i
    r_i >= t   ->  code 0b11, r_i -= t      (the receiver sees +t)
    r_i <= -t  ->  code 0b10, r_i += t      (the receiver sees -t)
    otherwise  ->  code 0b00                (the receiver sees 0)

So nothing is lost, only delayed: whatever was not sent stays in ``r`` and is sent once it grows
past the threshold. Sixteen codes fill one float32 of the compressed array (``ceil(n/16)``
floats): element ``i`` sits in float ``i // 16``, byte ``(i % 16) // 4`` of that float's memory,
and bits ``7-2c, 6-2c`` of that byte (``c = i % 4``), most significant pair first. This is the
layout MXNet's ``quantize_2bit`` writes, so compressed buffers can cross to MXNet-compatible code.

What it covers (MXNet's rule, complaint #10): only the *push* direction is compressed; pulls send
full-precision values. ``device`` stores quantize each source, dequantize at the merge buffer and
sum; ``dist`` stores compress worker-to-server traffic. Kernels here are numpy (CPU).
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from ..base import MXNetError

__all__ = ["GradientCompression", "parse_params", "compressed_size", "quantize_2bit",
           "dequantize_2bit"]

_F32 = np.dtype(np.float32)
# Two bits per value, most significant pair first: value j of a byte sits at bits (6-2j, 7-2j).
_SHIFTS = np.array([6, 4, 2, 0], dtype=np.uint8)
_POS, _NEG = np.uint8(0b11), np.uint8(0b10)


def compressed_size(num_elements: int) -> int:
    """Number of float32 values holding ``num_elements`` 2-bit codes (16 per float)."""
    return (int(num_elements) + 15) // 16


def quantize_2bit(grad: np.ndarray, residual: np.ndarray, threshold: float,
                  out: Optional[np.ndarray] = None) -> np.ndarray:
    """Add ``grad`` into ``residual``, send what crossed ``±threshold``; return the packed codes.

    Parameters
    ----------
    grad : numpy.ndarray (float32)
        The gradient to send (any shape; read only).
    residual : numpy.ndarray (float32, same size)
        The sender's residual; updated in place.
    threshold : float
        The positive threshold ``t``.
    out : numpy.ndarray (float32, ``compressed_size(grad.size)``), optional
        Where to write the packed codes; a new array when omitted.

    Returns
    -------
    numpy.ndarray
        The compressed float32 array (its bytes are the codes; the float values are meaningless).
    """
    n = grad.size
    if residual.size != n:
        raise MXNetError(f"quantize_2bit: residual has {residual.size} elements, gradient has {n}")
    if grad.dtype != _F32 or residual.dtype != _F32:
        raise MXNetError(f"quantize_2bit: only float32 is supported, got gradient {grad.dtype.name} "
                         f"and residual {residual.dtype.name}")
    t = np.float32(threshold)
    r = residual.reshape(-1)
    np.add(r, grad.reshape(-1), out=r)
    pos = r >= t
    neg = r <= -t
    # NOTE: float32 arithmetic on purpose: ``r - t`` in float64 would round differently from MXNet.
    np.subtract(r, t, out=r, where=pos)
    np.add(r, t, out=r, where=neg)
    size = compressed_size(n)
    codes = np.zeros(size * 16, dtype=np.uint8)
    codes[:n][pos] = _POS
    codes[:n][neg] = _NEG
    packed = np.bitwise_or.reduce(codes.reshape(-1, 4) << _SHIFTS, axis=1).astype(np.uint8)
    if out is None:
        out = np.empty(size, dtype=_F32)
    elif out.dtype != _F32 or out.size != size:
        raise MXNetError(f"quantize_2bit: out must be float32 with {size} elements, got "
                         f"{out.dtype.name} with {out.size}")
    out.reshape(-1).view(np.uint8)[:] = packed
    return out


def dequantize_2bit(compressed: np.ndarray, threshold: float, out: np.ndarray) -> np.ndarray:
    """Unpack codes into ``out`` (float32, the original shape): ``+t``, ``-t`` or ``0`` each."""
    n = out.size
    if compressed.size != compressed_size(n):
        raise MXNetError(f"dequantize_2bit: {compressed.size} compressed floats cannot hold {n} "
                         f"values (need {compressed_size(n)})")
    byte = np.ascontiguousarray(compressed).reshape(-1).view(np.uint8)
    codes = ((byte[:, None] >> _SHIFTS) & np.uint8(0b11)).reshape(-1)[:n]
    t = np.float32(threshold)
    flat = out.reshape(-1)
    flat[...] = 0
    flat[codes == _POS] = t
    flat[codes == _NEG] = -t
    return out


class GradientCompression:
    """A compression setting (``type`` and ``threshold``) as ``set_gradient_compression`` stores it.

    ``GradientCompression.parse({'type': '2bit', 'threshold': 0.5})``; the threshold defaults to
    0.5 as in MXNet and may be given as a string (MXNet passes the dict through its C API as text).
    """

    TYPES = ("2bit",)

    def __init__(self, type: str = "2bit", threshold: float = 0.5):
        self.type = type
        self.threshold = float(threshold)

    @classmethod
    def parse(cls, params: Dict[str, Any]) -> "GradientCompression":
        if not isinstance(params, dict):
            raise MXNetError(f"set_gradient_compression: compression_params must be a dict, got "
                             f"{type(params).__name__}")
        if "type" not in params:
            raise MXNetError("set_gradient_compression: compression_params needs a 'type' key "
                             f"(one of {list(cls.TYPES)})")
        kind = str(params["type"])
        if kind not in cls.TYPES:
            raise MXNetError(f"Unknown type for gradient compression {kind}")
        extra = set(params) - {"type", "threshold"}
        if extra:
            raise MXNetError(f"set_gradient_compression: unknown parameter(s) {sorted(extra)} for "
                             f"type {kind!r}")
        try:
            threshold = float(params.get("threshold", 0.5))
        except (TypeError, ValueError):
            raise MXNetError(f"set_gradient_compression: threshold must be a number, got "
                             f"{params['threshold']!r}") from None
        if not threshold > 0:
            raise MXNetError(f"set_gradient_compression: threshold must be greater than 0, got "
                             f"{threshold}")
        return cls(kind, threshold)

    def compressed_size(self, num_elements: int) -> int:
        return compressed_size(num_elements)

    def quantize(self, grad: np.ndarray, residual: np.ndarray, out: Optional[np.ndarray] = None):
        if not isinstance(grad, np.ndarray):     # device memory: the GPU kernel, same bits
            from ..ops.gpu import compression as gpu  # noqa: PLC0415
            return gpu.quantize_2bit(grad, residual, self.threshold, out)
        return quantize_2bit(grad, residual, self.threshold, out)

    def dequantize(self, compressed: np.ndarray, out: np.ndarray) -> np.ndarray:
        if not isinstance(out, np.ndarray):
            from ..ops.gpu import compression as gpu  # noqa: PLC0415
            return gpu.dequantize_2bit(compressed, self.threshold, out)
        return dequantize_2bit(compressed, self.threshold, out)

    def __repr__(self) -> str:
        return f"GradientCompression(type={self.type!r}, threshold={self.threshold})"


def parse_params(params: Dict[str, Any]) -> GradientCompression:
    """``GradientCompression.parse``: validate a ``set_gradient_compression`` dict."""
    return GradientCompression.parse(params)
