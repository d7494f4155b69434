"""``all_finite``, ``multi_all_finite`` and ``reset_arrays``: the checks and resets of mixed-precision
(AMP) training steps.

``all_finite(data)`` is the float32 array ``[1.]`` when every element of ``data`` is finite and
``[0.]`` otherwise; ``multi_all_finite(a_0, ..., num_arrays=n)`` is the same over all arrays. With
``init_output=False`` the output is not first set to 1, only cleared on a non-finite value, so one
output can accumulate the verdict over several calls (``out=``). ``reset_arrays(a_0, ...,
num_arrays=n)`` sets every input to zero in place and has no outputs (MXNet returns ``[]``).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, register

_F32 = np.dtype(np.float32)
_INIT = Param("bool", True, doc="Initialize output to 1.")


def _finite(octx, p, inputs, outputs, req):
    if req[0] == "null":
        return
    out = outputs[0]
    if p["init_output"]:
        out[...] = 1.0
    if not all(np.isfinite(a).all() for a in inputs):
        out[...] = 0.0


def _scalar_out(p, ins):
    return list(ins), [(1,)]


def _f32_out(p, ts):
    return list(ts), [_F32]


def _check_num(name):
    def validate(p):
        if p["num_arrays"] < 1:
            raise MXNetError(f"operator {name}: num_arrays must be >= 1, got {p['num_arrays']}")
    return validate


register(OpDef("all_finite", _finite, params={"init_output": _INIT}, infer_shape=_scalar_out,
               infer_type=_f32_out,
               doc="Check if all the float numbers in the array are finite (used for AMP).\n\n" + __doc__))
register(OpDef("multi_all_finite", _finite,
               arguments=lambda p: [f"array_{i}" for i in range(p["num_arrays"])],
               params={"num_arrays": Param("int", 1, doc="Number of arrays."), "init_output": _INIT},
               infer_shape=_scalar_out, infer_type=_f32_out, validate=_check_num("multi_all_finite"),
               doc="Check if all the float numbers in all the arrays are finite (used for AMP).\n\n"
                   + __doc__))


def _reset(octx, p, inputs, outputs, req):
    for a in inputs:
        a[...] = 0


register(OpDef("reset_arrays", _reset, arguments=lambda p: [f"array_{i}" for i in range(p["num_arrays"])],
               outputs=(), mutate=lambda p: list(range(p["num_arrays"])),
               params={"num_arrays": Param("int", doc="number of input arrays.")},
               infer_shape=lambda p, ins: (list(ins), []), infer_type=lambda p, ts: (list(ts), []),
               validate=_check_num("reset_arrays"),
               doc="Set to zero multiple arrays, in place (no outputs).\n\n" + __doc__))
