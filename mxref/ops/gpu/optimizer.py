"""GPU kernels of the optimizer updates (``kernels/optimizer.cu``): ``sgd_update``, ``sgd_mom_update``,
``adam_update``; the fused ``multi_sgd_update`` / ``multi_sgd_mom_update`` run the first two per weight."""
from __future__ import annotations

from ..kernels import get_kernel, register_kernel
from ..optimizer import adam as _adam  # noqa: F401 - the ops registered here must exist first
from ..optimizer import multi_sgd as _multi
from ..optimizer import sgd as _sgd  # noqa: F401
from ..registry import get
from ._launch import float_call, grid_1d, module, stream

FAMILY = "optimizer"
_TOL = {"float32": (1e-6, 1e-7), "float64": (1e-14, 1e-15)}


def _dense(params, inputs, outputs, req):
    return float_call(params, inputs, outputs, req) and req[0] in ("write", "inplace")


def _sgd_update(octx, params, inputs, outputs, req):
    w, g, out = inputs[0], inputs[1], outputs[0]
    if out.size:
        grid, block = grid_1d(out.size)
        module(FAMILY, out.dtype).get_function("sgd_update")(
            w, g, out, out.size, params["lr"], params["wd"], params["rescale_grad"], params["clip_gradient"],
            grid=grid, block=block, stream=stream(octx))


def _sgd_mom_update(octx, params, inputs, outputs, req):
    w, g, mom, out = inputs[0], inputs[1], inputs[2], outputs[0]
    if out.size:
        grid, block = grid_1d(out.size)
        module(FAMILY, out.dtype).get_function("sgd_mom_update")(
            w, g, mom, out, out.size, params["lr"], params["momentum"], params["wd"], params["rescale_grad"],
            params["clip_gradient"], grid=grid, block=block, stream=stream(octx))


register_kernel("sgd_update", "gpu", _sgd_update, applies=_dense, name="cuda.optimizer.sgd_update",
                exact=False, tol=_TOL)
register_kernel("sgd_mom_update", "gpu", _sgd_mom_update, applies=_dense,
                name="cuda.optimizer.sgd_mom_update", exact=False, tol=_TOL)


def _adam_update(octx, params, inputs, outputs, req):
    w, g, mean, var, out = inputs[0], inputs[1], inputs[2], inputs[3], outputs[0]
    if out.size:
        grid, block = grid_1d(out.size)
        module(FAMILY, out.dtype).get_function("adam_update")(
            w, g, mean, var, out, out.size, params["lr"], params["beta1"], params["beta2"], params["epsilon"],
            params["wd"], params["rescale_grad"], params["clip_gradient"], grid=grid, block=block,
            stream=stream(octx))


register_kernel("adam_update", "gpu", _adam_update, applies=_dense, name="cuda.optimizer.adam_update",
                exact=False, tol={"float32": (1e-5, 1e-6), "float64": (1e-13, 1e-14)})


def _fused(single: str, stride: int):
    """The fused op's GPU kernel: each weight through ``single``'s GPU kernel (SGD on a GPU with
    the optimizer's aggregation); it takes a call when every weight's group is dense float."""
    op = get(single)
    kernel = _multi._per_weight(lambda: get_kernel(op, "gpu"), stride, False)

    def applies(p, inputs, outputs, req):
        return all(_dense(p, inputs[i * stride:(i + 1) * stride], [outputs[i]], [req[i]])
                   for i in range(p["num_weights"]))
    return kernel, applies


for _name, _single, _stride in (("multi_sgd_update", "sgd_update", 2),
                                ("multi_sgd_mom_update", "sgd_mom_update", 3)):
    _kernel, _applies = _fused(_single, _stride)
    register_kernel(_name, "gpu", _kernel, applies=_applies, name=f"cuda.optimizer.{_name}",
                    exact=False, tol=_TOL)
