"""GPU kernels of ``Convolution`` (2-D, one group): im2col of the whole batch, one tiled GEMM, and
back (``kernels/conv.cu``, ``kernels/gemm.cu``)::

    forward:   cols = im2col(x)  (CK, N*S);   t = W @ cols  (F, N*S);   y = nchw(t) + bias
    backward:  t = fns(dout);  dW = t @ cols^T;  dcols = W^T @ t;  dx = col2im(dcols);  db = sum t
"""
from __future__ import annotations

from ..kernels import register_kernel
from ..nn import convolution as _conv
from ._launch import BLOCK, accumulate, float_call, grid_1d, module, scratch, stream
from .gemm import gemm

_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-11, 1e-12)}


def _applies(params, inputs, outputs, req):
    return (float_call(params, inputs, outputs, req) and len(params["kernel"]) == 2
            and params["num_group"] == 1 and inputs[0].size > 0)


def _geometry(params, x, out_spatial):
    """The im2col/col2im arguments after the arrays: N, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW."""
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = _conv.geometry("Convolution", params)
    return (*x.shape, kh, kw, sh, sw, ph, pw, dh, dw, *out_spatial)


def forward(octx, params, inputs, outputs, req):
    x, wt, y = inputs[0], inputs[1], outputs[0]
    if req[0] == "null":
        return
    geo = _geometry(params, x, y.shape[2:])
    n, c, kh, kw = geo[0], geo[1], geo[4], geo[5]
    f, ck, s = y.shape[1], c * kh * kw, geo[-2] * geo[-1]
    mod, st = module("conv", y.dtype), stream(octx)
    with scratch(y.device_id, (ck, n * s), y.dtype) as cols, scratch(y.device_id, (f, n * s), y.dtype) as t:
        grid, block = grid_1d(cols.size)
        mod.get_function("im2col2d")(x, cols, *geo, grid=grid, block=block, stream=st)
        gemm(octx, wt, cols, t, f, n * s, ck, False, False, "write")
        grid, block = grid_1d(y.size)
        mod.get_function("nchw_from_fns")(t, None if params["no_bias"] else inputs[2], y, n, f, s,
                                          accumulate(req[0]), grid=grid, block=block, stream=st)


def backward(octx, params, inputs, outputs, req):
    og, x, wt = inputs
    geo = _geometry(params, x, og.shape[2:])
    n, c, kh, kw = geo[0], geo[1], geo[4], geo[5]
    f, ck, s = og.shape[1], c * kh * kw, geo[-2] * geo[-1]
    mod, st = module("conv", og.dtype), stream(octx)
    dev = og.device_id
    with scratch(dev, (ck, n * s), og.dtype) as cols, scratch(dev, (f, n * s), og.dtype) as t:
        grid, block = grid_1d(t.size)
        mod.get_function("fns_from_nchw")(og, t, n, f, s, grid=grid, block=block, stream=st)
        if req[1] != "null":        # dW = t @ cols^T
            grid, block = grid_1d(cols.size)
            mod.get_function("im2col2d")(x, cols, *geo, grid=grid, block=block, stream=st)
            gemm(octx, t, cols, outputs[1], f, ck, n * s, False, True, req[1])
        if req[0] != "null":        # dcols = W^T @ t, then col2im into dx
            gemm(octx, wt, t, cols, ck, n * s, f, True, False, "write")
            grid, block = grid_1d(x.size)
            mod.get_function("col2im2d")(cols, outputs[0], *geo, accumulate(req[0]), grid=grid, block=block,
                                         stream=st)
    if not params["no_bias"] and req[2] != "null":
        from ..._ext.cuda import runtime  # noqa: PLC0415
        mod.get_function("channel_sum")(og, outputs[2], n, f, s, accumulate(req[2]),
                                        grid=(max(1, min(f, runtime.backend().max_grid * 8)),),
                                        block=(BLOCK,), stream=st)


register_kernel("Convolution", "gpu", forward, applies=_applies, name="cuda.conv.Convolution",
                exact=False, tol=_TOL)
register_kernel("_backward_Convolution", "gpu", backward, applies=_applies,
                name="cuda.conv._backward_Convolution", exact=False, tol=_TOL)
