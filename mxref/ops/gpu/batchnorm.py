"""GPU kernels of ``BatchNorm`` forward (batch or moving statistics) and backward
(``kernels/batchnorm.cu``)."""
from __future__ import annotations

import math

from ..kernels import register_kernel
from ..nn import batch_norm as _bn  # noqa: F401 - the ops registered here must exist first
from ._launch import BLOCK, float_call, module, stream

_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-11, 1e-12)}
_REQ = {"null": 0, "write": 1, "inplace": 1, "add": 2}


def _ncs(params, x):
    ax = params["axis"] % x.ndim
    return math.prod(x.shape[:ax]), x.shape[ax], math.prod(x.shape[ax + 1:])


def _applies(params, inputs, outputs, req):
    return float_call(params, inputs, outputs, req) and inputs[0].size > 0


def _grid(c):
    from ..._ext.cuda import runtime  # noqa: PLC0415
    return (max(1, min(c, runtime.backend().max_grid * 8)),)


def forward(octx, params, inputs, outputs, req):
    x, gamma, beta, mmean, mvar = inputs
    n, c, s = _ncs(params, x)
    batch = int(bool(octx.is_train) and not params["use_global_stats"])
    module("batchnorm", x.dtype).get_function("batchnorm_forward")(
        x, gamma, beta, mmean, mvar, outputs[0], outputs[1], outputs[2], n, c, s, params["eps"],
        params["momentum"], int(params["fix_gamma"]), batch, _REQ[req[0]], _REQ[req[1]], _REQ[req[2]],
        grid=_grid(c), block=(BLOCK,), stream=stream(octx))


def backward(octx, params, inputs, outputs, req):
    g, x, gamma, mean, invstd = inputs
    n, c, s = _ncs(params, x)
    batch = int(bool(octx.is_train) and not params["use_global_stats"])
    module("batchnorm", x.dtype).get_function("batchnorm_backward")(
        g, x, gamma, mean, invstd, outputs[0], outputs[1], outputs[2], n, c, s, int(params["fix_gamma"]),
        batch, _REQ[req[0]], _REQ[req[1]], _REQ[req[2]], grid=_grid(c), block=(BLOCK,), stream=stream(octx))


register_kernel("BatchNorm", "gpu", forward, applies=_applies, name="cuda.batchnorm.BatchNorm",
                exact=False, tol=_TOL)
register_kernel("_backward_BatchNorm", "gpu", backward, applies=_applies,
                name="cuda.batchnorm._backward_BatchNorm", exact=False, tol=_TOL)
