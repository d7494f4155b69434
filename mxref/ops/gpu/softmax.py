"""GPU kernels of softmax, log_softmax, SoftmaxOutput and the fused softmax cross-entropy
(``_softmax_cross_entropy_pick``) (``kernels/softmax.cu``)."""
from __future__ import annotations

import math

from ..kernels import register_kernel
from ..nn import softmax as _sm_ops  # noqa: F401 - the ops registered here must exist first
from ..nn import softmax_cross_entropy_pick as _ce_ops  # noqa: F401
from ..nn import softmax_output as _smo_ops  # noqa: F401
from ._launch import BLOCK, accumulate, float_call, grid_1d, module, stream

FAMILY = "softmax"
_TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-13)}


def _rows(shape, axis):
    axis %= len(shape)
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _grid(rows):
    from ..._ext.cuda import runtime  # noqa: PLC0415
    return (max(1, min(rows, runtime.backend().max_grid * 8)),)


def _inv_t(params):
    t = params.get("temperature")
    return 1.0 if t is None else 1.0 / t


def _plain(params, inputs, outputs, req):
    return (float_call(params, inputs, outputs, req) and not params.get("use_length")
            and params.get("dtype") is None and inputs[0].size > 0)


def _forward(log_mode: int):
    def kernel(octx, params, inputs, outputs, req):
        x, y = inputs[0], outputs[0]
        if req[0] == "null":
            return
        outer, mid, inner = _rows(x.shape, params["axis"])
        module(FAMILY, y.dtype).get_function("softmax_axis")(
            x, y, outer, mid, inner, _inv_t(params), log_mode, grid=_grid(outer * inner), block=(BLOCK,),
            stream=stream(octx))
    return kernel


def _backward(log_mode: int):
    def kernel(octx, params, inputs, outputs, req):
        g, y, dx = inputs[0], inputs[1], outputs[0]
        if req[0] == "null":
            return
        outer, mid, inner = _rows(y.shape, params["axis"])
        module(FAMILY, dx.dtype).get_function("softmax_axis_backward")(
            g, y, dx, outer, mid, inner, _inv_t(params), log_mode, accumulate(req[0]),
            grid=_grid(outer * inner), block=(BLOCK,), stream=stream(octx))
    return kernel


def _softmax_output_2d(params, inputs, outputs, req):
    """SoftmaxOutput on (n, k) scores with one integer label per row (the classifier case)."""
    x = inputs[0]
    return (float_call(params, inputs, outputs, req) and x.ndim == 2 and x.size > 0
            and inputs[1].shape == (x.shape[0],) and not params["multi_output"]
            and not params["preserve_shape"] and not params["out_grad"] and params["smooth_alpha"] == 0
            and params["normalization"] in ("null", "batch"))


def _softmax_output(octx, params, inputs, outputs, req):
    x, y = inputs[0], outputs[0]
    if req[0] != "null":
        module(FAMILY, y.dtype).get_function("softmax_axis")(
            x, y, x.shape[0], x.shape[1], 1, 1.0, 0, grid=_grid(x.shape[0]), block=(BLOCK,),
            stream=stream(octx))


def _softmax_output_backward(octx, params, inputs, outputs, req):
    p, label, dx = inputs[0], inputs[1], outputs[0]
    if req[0] == "null":
        return
    n, k = p.shape
    scale = params["grad_scale"] / (n if params["normalization"] == "batch" else 1)
    grid, block = grid_1d(p.size)
    module(FAMILY, dx.dtype).get_function("softmax_output_backward")(
        p, label, dx, n, k, scale, int(params["use_ignore"]), params["ignore_label"], accumulate(req[0]),
        grid=grid, block=block, stream=stream(octx))


for _name, _log in (("softmax", 0), ("log_softmax", 1)):
    register_kernel(_name, "gpu", _forward(_log), applies=_plain, name=f"cuda.softmax.{_name}",
                    exact=False, tol=_TOL)
    register_kernel(f"_backward_{_name}", "gpu", _backward(_log), applies=_plain,
                    name=f"cuda.softmax._backward_{_name}", exact=False, tol=_TOL)
register_kernel("SoftmaxOutput", "gpu", _softmax_output, applies=_softmax_output_2d,
                name="cuda.softmax.SoftmaxOutput", exact=False, tol=_TOL)
register_kernel("_backward_SoftmaxOutput", "gpu", _softmax_output_backward, applies=_softmax_output_2d,
                name="cuda.softmax._backward_SoftmaxOutput", exact=False, tol=_TOL)


def _ce_applies(params, inputs, outputs, req):
    return (float_call(params, inputs, outputs, req) and inputs[0].size > 0
            and req[0] in ("write", "inplace", "add"))


def _ce_forward(octx, params, inputs, outputs, req):
    x, label, loss = inputs[0], inputs[1], outputs[0]
    outer, mid, inner = _rows(x.shape, params["axis"])
    module(FAMILY, x.dtype).get_function("softmax_ce_forward")(
        x, label, loss, outer, mid, inner, accumulate(req[0]), grid=_grid(outer * inner), block=(BLOCK,),
        stream=stream(octx))


def _ce_backward(octx, params, inputs, outputs, req):
    g, x, label, dx = inputs[0], inputs[1], inputs[2], outputs[0]
    outer, mid, inner = _rows(x.shape, params["axis"])
    module(FAMILY, x.dtype).get_function("softmax_ce_backward")(
        g, x, label, dx, outer, mid, inner, accumulate(req[0]), grid=_grid(outer * inner), block=(BLOCK,),
        stream=stream(octx))


register_kernel("_softmax_cross_entropy_pick", "gpu", _ce_forward, applies=_ce_applies,
                name="cuda.softmax._softmax_cross_entropy_pick", exact=False, tol=_TOL)
register_kernel("_backward_softmax_cross_entropy_pick", "gpu", _ce_backward, applies=_ce_applies,
                name="cuda.softmax._backward_softmax_cross_entropy_pick", exact=False, tol=_TOL)
