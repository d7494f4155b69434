"""contrib.quantize / contrib.dequantize: float32 <-> int8 / uint8 with a calibrated range.

Math (``lo, hi`` the range inputs, shape ``(1,)``)::

    int8  (zero-centred)  r = max(|lo|, |hi|)        q = sign(x) * min(|x| * 127 / r + 0.5, 127)
                          out range (-r, r)          x' = q * r / 127
    uint8                 s = 255 / (hi - lo)        q = (x - lo) * s + 0.5   (truncated, in [0, 255])
                          out range (lo, hi)         x' = q * (hi - lo) / 255 + lo

These are the formulas of MXNet's reference kernels (``quantize-inl.h``, ``dequantize-inl.h``);
MXNet's MKLDNN build rounds differently. Neither operator has a gradient (as in MXNet).
Kernels: numpy (the reference).
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .registry import OpDef, Param, assign, register

_RANGE = (1,)


def _real_range(lo, hi) -> np.float32:
    return np.float32(max(abs(float(lo[0])), abs(float(hi[0]))))


def _quantize(octx, p, inputs, outputs, req):
    x, lo, hi = inputs
    if p["out_type"] == "int8":
        r = _real_range(lo, hi)
        mag = np.minimum(np.abs(x) * (np.float32(127) / r) + np.float32(0.5), np.float32(127))
        q, out_lo, out_hi = np.trunc(np.sign(x) * mag), -r, r
    else:
        scale = np.float32(255) / (np.float32(hi[0]) - np.float32(lo[0]))
        q = np.clip(np.trunc((x - np.float32(lo[0])) * scale + np.float32(0.5)), 0, 255)
        out_lo, out_hi = lo[0], hi[0]
    assign(outputs[0], req[0], q.astype(outputs[0].dtype))
    assign(outputs[1], req[1], np.full(_RANGE, out_lo, np.float32))
    assign(outputs[2], req[2], np.full(_RANGE, out_hi, np.float32))


def _dequantize(octx, p, inputs, outputs, req):
    q, lo, hi = inputs
    qf = q.astype(np.float32)
    if q.dtype == np.int8:
        out = qf * (_real_range(lo, hi) / np.float32(127))
    else:
        out = qf * ((np.float32(hi[0]) - np.float32(lo[0])) / np.float32(255)) + np.float32(lo[0])
    assign(outputs[0], req[0], out)


def _shape(n_out):
    def infer(p, s):
        return [s[0], _RANGE, _RANGE], ([s[0], _RANGE, _RANGE] if n_out == 3 else [s[0]])
    return infer


def _quantize_type(p, t):
    if t[0] is not None and t[0] != np.float32:
        raise MXNetError(f"quantize: data must be float32, got {t[0]}")
    f32 = np.dtype(np.float32)
    return [f32, f32, f32], [np.dtype(p["out_type"]), f32, f32]


def _dequantize_type(p, t):
    if t[0] is not None and t[0] not in (np.int8, np.uint8):
        raise MXNetError(f"dequantize: data must be int8 or uint8, got {t[0]}")
    f32 = np.dtype(np.float32)
    return [t[0], f32, f32], [f32]


_ARGS = ["data", "min_range", "max_range"]
register(OpDef("_contrib_quantize", _quantize, arguments=_ARGS,
               outputs=["output", "min_output", "max_output"],
               params={"out_type": Param("str", "uint8", choices=("int8", "uint8"),
                                         doc="The quantized type.")},
               infer_shape=_shape(3), infer_type=_quantize_type, doc=__doc__))
register(OpDef("_contrib_dequantize", _dequantize, arguments=_ARGS,
               params={"out_type": Param("str", "float32", choices=("float32",),
                                         doc="The dequantized type.")},
               infer_shape=_shape(1), infer_type=_dequantize_type, doc=__doc__))
