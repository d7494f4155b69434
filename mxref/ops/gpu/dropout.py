"""GPU kernel of ``Dropout`` (``kernels/dropout.cu``): a Philox mask keyed from the 'random'
resource, and its backward (``g * mask``, the elementwise multiply)."""
from __future__ import annotations

from ..kernels import register_kernel
from ..nn import dropout as _dropout  # noqa: F401 - the ops registered here must exist first
from ._launch import float_call, grid_1d, module, stream
from .elementwise import _binary_kernel, collapse_broadcast, launch_fill, launch_unary

_TOL = {"float32": (1e-6, 1e-7), "float64": (1e-14, 1e-15)}


def _applies(params, inputs, outputs, req):
    x = inputs[0]
    if not float_call(params, inputs, outputs, req) or req[0] not in ("write", "inplace"):
        return False
    mshape = [1 if i in {a % max(x.ndim, 1) for a in params["axes"]} else d for i, d in enumerate(x.shape)]
    return collapse_broadcast(x.shape, [mshape]) is not None


def forward(octx, params, inputs, outputs, req):
    x, (y, mask) = inputs[0], outputs
    if not ((octx.is_train or params["mode"] == "always") and params["p"] > 0):
        launch_fill(octx, mask, 1.0)
        launch_unary(octx, 0, x, y, req[0])        # OP_COPY
        return
    if y.size == 0:
        return
    axes = {a % x.ndim for a in params["axes"]}
    mshape = [1 if i in axes else d for i, d in enumerate(x.shape)]
    dims, (ms,) = collapse_broadcast(x.shape, [mshape])
    # One 64-bit key per call, drawn from the resource's generator: reproducible under mx.random.seed.
    key = int(octx.rng.integers(0, 1 << 63))
    grid, block = grid_1d(y.size)
    module("dropout", y.dtype).get_function("dropout_forward")(
        x, y, mask, y.size, dims[1], dims[2], dims[3], *ms, params["p"], key & 0xFFFFFFFF, key >> 32,
        grid=grid, block=block, stream=stream(octx))


register_kernel("Dropout", "gpu", forward, applies=_applies, name="cuda.dropout.Dropout")
register_kernel("_backward_Dropout", "gpu", _binary_kernel("mul"), applies=float_call,
                name="cuda.dropout._backward_Dropout", exact=False, tol=_TOL)
