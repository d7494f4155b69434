"""GPU kernels of the reductions (``kernels/reduce.cu``): sum, mean, max, min, norm, argmax, argmin
along one contiguous run of axes (the common case: one axis, or all of them)."""
from __future__ import annotations

import math
from typing import Optional, Tuple

from .. import reduce as _reduce  # noqa: F401 - the ops registered here must exist first
from ..kernels import register_kernel
from ..reduce import reduce_axes, reduced_shape
from ._launch import BLOCK, accumulate, float_call, module, opcodes, stream

FAMILY = "reduce"
_TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-13)}


def split_axes(shape, axes) -> Optional[Tuple[int, int, int]]:
    """``(outer, mid, inner)`` of ``shape`` with the reduced ``axes`` as ``mid``; ``None`` unless
    the axes (ignoring size-1 ones) form one contiguous run."""
    real = [a for a in axes if shape[a] != 1]
    if real and any(a not in axes and shape[a] != 1 for a in range(real[0], real[-1] + 1)):
        return None
    if not real:
        return math.prod(shape), 1, 1
    return (math.prod(shape[:real[0]]), math.prod(shape[real[0]:real[-1] + 1]),
            math.prod(shape[real[-1] + 1:]))


def _grid(outputs: int):
    from ..._ext.cuda import runtime  # noqa: PLC0415
    return (max(1, min(outputs, runtime.backend().max_grid * 8)),), (BLOCK,)


def _axes(op, params, ndim):
    return reduce_axes(op, params["axis"], ndim, params.get("exclude", False))


def _reduce_kernel(op: str, code: str):
    def applies(params, inputs, outputs, req):
        if not float_call(params, inputs, outputs, req):
            return False
        if op == "norm" and params["ord"] not in (1, 2):
            return False
        return split_axes(inputs[0].shape, _axes(op, params, inputs[0].ndim)) is not None

    def kernel(octx, params, inputs, outputs, req):
        x, y = inputs[0], outputs[0]
        if req[0] == "null" or y.size == 0:
            return
        outer, mid, inner = split_axes(x.shape, _axes(op, params, x.ndim))
        c = code if op != "norm" else ("norm1" if params["ord"] == 1 else "norm2")
        if x.size == 0:          # a reduction over nothing: the identity (sum 0, max -inf, ...)
            from .elementwise import launch_fill  # noqa: PLC0415
            launch_fill(octx, y, {"sum": 0.0, "mean": float("nan"), "norm": 0.0}.get(op, float("nan")))
            return
        module(FAMILY, y.dtype).get_function("reduce_axis")(
            x, y, outer, mid, inner, opcodes(FAMILY)[c], accumulate(req[0]), grid=_grid(outer * inner)[0],
            block=(BLOCK,), stream=stream(octx))
    kernel.__name__ = f"gpu_reduce_{op}"
    register_kernel(op, "gpu", kernel, applies=applies, name=f"cuda.reduce.{op}", exact=False, tol=_TOL)


def _arg_kernel(op: str):
    def _split(params, x):
        axis = params["axis"]
        return split_axes(
            x.shape, tuple(range(x.ndim)) if axis is None else (axis % x.ndim,))

    def applies(params, inputs, outputs, req):
        return (float_call(params, inputs, outputs, req) and inputs[0].size > 0
                and req[0] in ("write", "inplace") and _split(params, inputs[0]) is not None)

    def kernel(octx, params, inputs, outputs, req):
        x, y = inputs[0], outputs[0]
        outer, mid, inner = _split(params, x)
        module(FAMILY, y.dtype).get_function("argreduce_axis")(
            x, y, outer, mid, inner, opcodes(FAMILY)[op], grid=_grid(outer * inner)[0], block=(BLOCK,),
            stream=stream(octx))
    kernel.__name__ = f"gpu_{op}"
    register_kernel(op, "gpu", kernel, applies=applies, name=f"cuda.reduce.{op}")


for _op in ("sum", "mean", "max", "min", "norm"):
    _reduce_kernel(_op, _op)
for _op in ("argmax", "argmin"):
    _arg_kernel(_op)


def _backward_reduce(op: str):
    """``_backward_sum`` / ``_backward_mean`` (ograd, data, output): broadcast the head gradient
    back over the reduced axes (times 1/n for mean)."""
    def applies(params, inputs, outputs, req):
        x = inputs[1]
        if not float_call(params, inputs[:2], outputs, req) or req[0] == "add" and op == "mean":
            return False
        from .elementwise import collapse_broadcast  # noqa: PLC0415
        kshape = reduced_shape(x.shape, _axes(op, params, x.ndim), True)
        return collapse_broadcast(x.shape, [kshape]) is not None

    def kernel(octx, params, inputs, outputs, req):
        from .elementwise import launch_broadcast_to  # noqa: PLC0415
        g, x, dx = inputs[0], inputs[1], outputs[0]
        axes = _axes(op, params, x.ndim)
        kshape = reduced_shape(x.shape, axes, True)
        n = math.prod(x.shape[a] for a in axes) if axes else 1
        launch_broadcast_to(octx, g, kshape, dx, req[0], 1.0 / max(n, 1) if op == "mean" else 1.0)
    kernel.__name__ = f"gpu_backward_{op}"
    register_kernel(f"_backward_{op}", "gpu", kernel, applies=applies, name=f"cuda.reduce._backward_{op}",
                    exact=False, tol=_TOL)


for _op in ("sum", "mean"):
    _backward_reduce(_op)
