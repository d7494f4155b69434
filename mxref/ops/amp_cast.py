"""``amp_cast`` and ``amp_multicast``: the casts automatic mixed precision (AMP) inserts.

They cast only between the low-precision floats and float32 and leave every other dtype alone:

* ``amp_cast(data, dtype)``: ``data`` cast to ``dtype`` when ``data`` is float16 or float32; any
  other input (float64, integers) passes through with its own dtype.
* ``amp_multicast(d_0, ..., num_outputs=n, cast_narrow=False)``: every float16/float32 input cast
  to one common type: float32 if any input is float32, else the first input's dtype (MXNet's
  rule, so a float64 first input makes it float64); with ``cast_narrow=True``, float16 if any
  input is float16, else float32. Other inputs pass through.

Gradients: each head gradient cast back to its input's dtype (``_backward_Cast``). mxref has no
bfloat16 (numpy lacks it), so ``dtype='bfloat16'`` is refused by the dtype parser.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .registry import OpDef, Param, register

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_LOW = (_F16, _F32)


def _copy_cast(octx, params, inputs, outputs, req):
    for x, y, r in zip(inputs, outputs, req):
        if r == "add":
            y += x.astype(y.dtype)
        elif r != "null" and not (y is x or (r == "inplace" and y.dtype == x.dtype)):
            np.copyto(y, x, casting="unsafe")


def _cast_back(node, ograds):
    return [NodeEntry(make_node("_backward_Cast", [g, e], f"{node.name}_backward_{i}"), 0, 0)
            for i, (g, e) in enumerate(zip(ograds, node.inputs))]


def _amp_cast_type(p, ts):
    t = ts[0]
    return list(ts), [p["dtype"] if t in _LOW else t]


register(OpDef("amp_cast", _copy_cast, params={"dtype": Param("dtype", doc="Output data type.")},
               infer_type=_amp_cast_type, gradient=_cast_back, inplace=[(0, 0)],
               doc="Cast function between low precision float/FP32 used by AMP.\n\n" + __doc__))


def _multicast_type(p, ts):
    if any(t is None for t in ts):
        return list(ts), [t if t is None or t not in _LOW else None for t in ts]
    if p["cast_narrow"]:
        common = _F16 if _F16 in ts else _F32
    else:
        common = _F32 if _F32 in ts else ts[0]
    return list(ts), [common if t in _LOW else t for t in ts]


def _multicast_shape(p, ins):
    return list(ins), list(ins)


def _check(p):
    if p["num_outputs"] < 1:
        raise MXNetError(f"operator amp_multicast: num_outputs must be >= 1, got {p['num_outputs']}")


register(OpDef("amp_multicast", _copy_cast,
               arguments=lambda p: [f"data_{i}" for i in range(p["num_outputs"])],
               outputs=lambda p: [f"output{i}" for i in range(p["num_outputs"])],
               params={"num_outputs": Param("int", doc="Number of input/output pairs to be casted "
                                                        "to the widest type."),
                       "cast_narrow": Param("bool", False, doc="Whether to cast to the narrowest type")},
               infer_shape=_multicast_shape, infer_type=_multicast_type, gradient=_cast_back,
               validate=_check, inplace=[(0, 0)],
               doc="Cast function used by AMP, that casts its inputs to the common widest type.\n\n"
                   + __doc__))
