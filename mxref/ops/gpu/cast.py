"""GPU kernel of ``Cast`` (and its backward) between float32, float64 and int32
(``kernels/cast.cu``, one module per type pair)."""
from __future__ import annotations

from .. import cast as _cast_ops  # noqa: F401 - the ops registered here must exist first
from ..kernels import register_kernel
from ._launch import grid_1d, stream

_C = {"float32": "float", "float64": "double", "int32": "int"}


def _applies(params, inputs, outputs, req):
    return inputs[0].dtype.name in _C and outputs[0].dtype.name in _C and req[0] in ("write", "inplace")


def _cast(octx, params, inputs, outputs, req):
    x, y = inputs[0], outputs[0]
    if y.size == 0:
        return
    from ..._ext.cuda import runtime  # noqa: PLC0415
    mod = runtime.module("cast", None, [f"-Dsrc_t={_C[x.dtype.name]}", f"-Ddst_t={_C[y.dtype.name]}"])
    grid, block = grid_1d(y.size)
    mod.get_function("cast")(x, y, y.size, grid=grid, block=block, stream=stream(octx))


# float -> int truncates toward zero, as numpy's astype: the same bits.
register_kernel("Cast", "gpu", _cast, applies=_applies, name="cuda.cast.Cast")
register_kernel("_backward_Cast", "gpu", _cast, applies=_applies, name="cuda.cast._backward_Cast")
