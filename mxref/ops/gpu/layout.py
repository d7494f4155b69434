"""GPU kernels that move data (``kernels/layout.cu``): transpose, slice, slice_axis, Concat and
their backward through one strided copy; Embedding and take (axis 0) by row gather, their
backward by atomic scatter-add."""
from __future__ import annotations

import math
from typing import Sequence

from .. import indexing, join, shape, slicing  # noqa: F401 - the ops registered here must exist first
from ..kernels import register_kernel
from ..nn import embedding as _embedding  # noqa: F401
from ._launch import accumulate, float_call, grid_1d, module, stream

_MAXD = 6


def _strides(shape) -> list:
    st, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        st[i] = acc
        acc *= shape[i]
    return st


def strided_copy(octx, x, y, dims: Sequence[int], x0: int, xs: Sequence[int], y0: int, ys: Sequence[int],
                 req: str) -> None:
    """``y[y0 + c.ys] (+)= x[x0 + c.xs]`` over the iteration shape ``dims`` (at most 6 axes)."""
    n = math.prod(dims)
    if req == "null" or n == 0:
        return
    pad = _MAXD - len(dims)
    dims, xs, ys = [1] * pad + list(dims), [0] * pad + list(xs), [0] * pad + list(ys)
    grid, block = grid_1d(n)
    module("layout", y.dtype).get_function("strided_copy")(
        x, y, n, *dims[1:], x0, *xs, y0, *ys, accumulate(req), grid=grid, block=block, stream=stream(octx))


def _upto6(params, inputs, outputs, req):
    return float_call(params, inputs, outputs, req) and all(a.ndim <= _MAXD for a in (*inputs, *outputs))


def _transpose(octx, params, inputs, outputs, req):
    x, y = inputs[0], outputs[0]
    perm = shape._perm(params, x.ndim)
    xs = _strides(x.shape)
    strided_copy(octx, x, y, y.shape, 0, [xs[a] for a in perm], 0, _strides(y.shape), req[0])


def _window(key, shape_):
    """Offset, strides and sizes of the region ``key`` (a tuple of slices) of a C-order array."""
    st = _strides(shape_)
    off, strides, dims = 0, [], []
    for i, d in enumerate(shape_):
        sl = key[i] if i < len(key) else slice(None)
        start, stop, step = sl.indices(d)
        off += start * st[i]
        strides.append(step * st[i])
        dims.append(len(range(start, stop, step)))
    return off, strides, dims


def _slice_like(key_of):
    def kernel(octx, params, inputs, outputs, req):
        x, y = inputs[0], outputs[0]
        off, xs, dims = _window(key_of(params, x.shape), x.shape)
        strided_copy(octx, x, y, dims, off, xs, 0, _strides(y.shape), req[0])
    return kernel


def _region_backward(key_of):
    """d(data) of a slice: zeros, and g in the sliced region."""
    def kernel(octx, params, inputs, outputs, req):
        g, dx = inputs[0], outputs[0]
        if req[0] == "null":
            return
        if req[0] != "add":
            from .elementwise import launch_fill  # noqa: PLC0415
            launch_fill(octx, dx, 0.0)
        off, ds, dims = _window(key_of(params, dx.shape), dx.shape)
        strided_copy(octx, g, dx, dims, 0, _strides(g.shape), off, ds, "add")
    return kernel


def _concat(octx, params, inputs, outputs, req):
    y = outputs[0]
    dim = params["dim"] % y.ndim
    ys, at = _strides(y.shape), 0
    for x in inputs:
        strided_copy(octx, x, y, x.shape, 0, _strides(x.shape), at * ys[dim], ys, req[0])
        at += x.shape[dim]


def _concat_backward(octx, params, inputs, outputs, req):
    g = inputs[0]
    dim = params["dim"] % g.ndim
    gs, at = _strides(g.shape), 0
    for dx, r in zip(outputs, req):
        strided_copy(octx, g, dx, dx.shape, at * gs[dim], gs, 0, _strides(dx.shape), r)
        at += dx.shape[dim]


def _rows_applies(params, inputs, outputs, req):
    return float_call(params, inputs, outputs, req) and req[0] in ("write", "inplace", "add")


def _embedding_fwd(octx, params, inputs, outputs, req):
    idx, w, y = inputs[0], inputs[1], outputs[0]
    if y.size and req[0] != "null":
        grid, block = grid_1d(y.size)
        module("layout", y.dtype).get_function("gather_rows")(idx, w, y, idx.size, w.shape[0], w.shape[1], 0,
                                                             accumulate(req[0]), grid=grid, block=block,
                                                             stream=stream(octx))


def _scatter(octx, idx, g, dw, req, wrap):
    if req == "null":
        return
    if req != "add":
        from .elementwise import launch_fill  # noqa: PLC0415
        launch_fill(octx, dw, 0.0)
    d = math.prod(dw.shape[1:])
    if g.size:
        grid, block = grid_1d(g.size)
        fn = module("layout", dw.dtype).get_function("scatter_add_rows")
        fn(idx, g, dw, idx.size, dw.shape[0], d, wrap, grid=grid, block=block, stream=stream(octx))


def _embedding_bwd(octx, params, inputs, outputs, req):
    _scatter(octx, inputs[1], inputs[0], outputs[0], req[0], 0)


def _take_applies(params, inputs, outputs, req):
    return (float_call(params, inputs, outputs, req) and params["axis"] % inputs[0].ndim == 0
            and params["mode"] in ("clip", "wrap"))


def _take(octx, params, inputs, outputs, req):
    a, idx, y = inputs[0], inputs[1], outputs[0]
    if y.size and req[0] != "null":
        d = math.prod(a.shape[1:])
        grid, block = grid_1d(y.size)
        module("layout", y.dtype).get_function("gather_rows")(
            idx, a, y, idx.size, a.shape[0], d, int(params["mode"] == "wrap"), accumulate(req[0]), grid=grid,
            block=block, stream=stream(octx))


def _take_backward(octx, params, inputs, outputs, req):
    g, a, idx = inputs
    _scatter(octx, idx, g, outputs[0], req[0], int(params["mode"] == "wrap"))
    if req[1] not in ("null", "add"):
        from .elementwise import launch_fill  # noqa: PLC0415
        launch_fill(octx, outputs[1], 0.0)


def _reg(op, fn, applies=_upto6, exact=True):
    kw = {} if exact else {"exact": False, "tol": {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-13)}}
    register_kernel(op, "gpu", fn, applies=applies, name=f"cuda.layout.{op}", **kw)


_reg("transpose", _transpose)
_reg("slice", _slice_like(lambda p, s: slicing.slice_key("slice", p, s)))
_reg("slice_axis", _slice_like(lambda p, s: slicing._axis_key("slice_axis", p, s)))
_reg("_backward_slice_axis", _region_backward(lambda p, s: slicing._axis_key("slice_axis", p, s)))
_reg("Concat", _concat)
_reg("_backward_Concat", _concat_backward)
# Atomic adds of repeated rows sum in any order: within a tolerance of the reference.
_reg("Embedding", _embedding_fwd, applies=_rows_applies)
_reg("_backward_Embedding", _embedding_bwd, applies=_rows_applies, exact=False)
_reg("take", _take, applies=_take_applies)
_reg("_backward_take", _take_backward, applies=_take_applies, exact=False)
