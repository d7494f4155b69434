"""GPU kernels of 2-D ``Pooling`` (max / avg / sum), forward and backward (``kernels/pooling.cu``)."""
from __future__ import annotations

from ..kernels import register_kernel
from ..nn import pooling as _pool
from ._launch import accumulate, float_call, grid_1d, module, opcodes, stream

_TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-13)}


def _applies(params, inputs, outputs, req):
    x = inputs[1] if len(inputs) == 3 else inputs[0]
    return (float_call(params, inputs, outputs, req) and x.ndim == 4 and x.size > 0
            and params["pool_type"] in ("max", "avg", "sum") and params["layout"] in (None, "NCHW"))


def _args(params, x, out_spatial):
    k, s, pd, out, _ = _pool.geometry(params, x.shape)
    include = params["count_include_pad"] in (None, True, "True", "true", 1, "1")
    n, c, h, w = x.shape
    return (n * c, h, w, out[0], out[1], k[0], k[1], s[0], s[1], pd[0], pd[1],
            opcodes("pooling")[params["pool_type"]], int(include))


def forward(octx, params, inputs, outputs, req):
    x, y = inputs[0], outputs[0]
    if req[0] == "null":
        return
    grid, block = grid_1d(y.size)
    module("pooling", y.dtype).get_function("pool2d_forward")(
        x, y, *_args(params, x, y.shape[2:]), accumulate(req[0]), grid=grid, block=block, stream=stream(octx))


def backward(octx, params, inputs, outputs, req):
    g, x, dx = inputs[0], inputs[1], outputs[0]
    if req[0] == "null":
        return
    if req[0] != "add":
        from .elementwise import launch_fill  # noqa: PLC0415
        launch_fill(octx, dx, 0.0)
    grid, block = grid_1d(g.size)
    module("pooling", g.dtype).get_function("pool2d_backward")(
        g, x, dx, *_args(params, x, g.shape[2:]), grid=grid, block=block, stream=stream(octx))


register_kernel("Pooling", "gpu", forward, applies=_applies, name="cuda.pooling.Pooling", exact=False,
                tol=_TOL)
register_kernel("_backward_Pooling", "gpu", backward, applies=_applies, name="cuda.pooling._backward_Pooling",
                exact=False, tol=_TOL)
