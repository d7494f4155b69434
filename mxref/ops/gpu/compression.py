"""GPU 2-bit gradient compression (``kernels/compression.cu``), bit-compatible with the host's
``mxref.kvstore.compression`` (which calls these for device arrays)."""
from __future__ import annotations

from ...base import MXNetError
from ._launch import grid_1d, module, stream

__all__ = ["quantize_2bit", "dequantize_2bit"]


def _check(*arrays):
    for a in arrays:
        if a.dtype.name != "float32":
            raise MXNetError(f"2-bit compression: only float32 is supported, got {a.dtype.name}")


def quantize_2bit(grad, residual, threshold: float, out, octx=None):
    """``residual += grad``; codes of what crossed ``±threshold`` into ``out`` (``ceil(n/16)``
    float32 words); the sent amounts leave the residual."""
    _check(grad, residual, out)
    n = grad.size
    if residual.size != n or out.size != (n + 15) // 16:
        raise MXNetError(f"quantize_2bit: gradient of {n} elements needs a residual of {n} and an output of "
                         f"{(n + 15) // 16}, got {residual.size} and {out.size}")
    if n:
        grid, block = grid_1d(out.size)
        module("compression", None).get_function("quantize_2bit")(grad, residual, out, n, float(threshold),
                                                                  grid=grid, block=block, stream=stream(octx))
    return out


def dequantize_2bit(compressed, threshold: float, out, octx=None):
    """``out`` = ``+threshold``, ``-threshold`` or 0 for each 2-bit code."""
    _check(compressed, out)
    if compressed.size != (out.size + 15) // 16:
        raise MXNetError(f"dequantize_2bit: {compressed.size} compressed floats cannot hold "
                         f"{out.size} values")
    if out.size:
        grid, block = grid_1d(out.size)
        fn = module("compression", None).get_function("dequantize_2bit")
        fn(compressed, out, out.size, float(threshold), grid=grid, block=block, stream=stream(octx))
    return out
