"""GPU kernels built on the tiled GEMM (``kernels/gemm.cu``): ``dot`` (2-D) and ``FullyConnected``
forward and backward. The teaching kernel is the one that runs; ``gemm()`` is the entry point a
faster path (cuBLAS) would take over."""
from __future__ import annotations

from ..kernels import register_kernel
from ..linalg import _PARAMS  # noqa: F401 - dot must be registered first
from ..nn import fully_connected as _fc  # noqa: F401
from ._launch import accumulate, float_call, grid_1d, module, stream

FAMILY = "gemm"
TILE = 16
_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-11, 1e-12)}   # sums in another order than BLAS


def gemm(octx, a, b, c, m: int, n: int, k: int, trans_a: bool, trans_b: bool, req: str,
         alpha: float = 1.0) -> None:
    """``c (+)= alpha * op(a) @ op(b)`` for row-major device arrays; ``req`` 'add' accumulates."""
    if req == "null" or m == 0 or n == 0:
        return
    beta = float(accumulate(req))
    if k == 0:
        if not beta:
            from .elementwise import launch_fill  # noqa: PLC0415
            launch_fill(octx, c, 0.0)
        return
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    module(FAMILY, c.dtype).get_function("gemm_tiled")(
        a, b, c, m, n, k, int(trans_a), int(trans_b), alpha, beta, grid=grid, block=(TILE, TILE),
        stream=stream(octx))


def _dot_applies(params, inputs, outputs, req):
    return float_call(params, inputs, outputs, req) and inputs[0].ndim == 2 and inputs[1].ndim == 2


def _dot(octx, params, inputs, outputs, req):
    a, b = inputs
    ta, tb = params["transpose_a"], params["transpose_b"]
    m, k = (a.shape[1], a.shape[0]) if ta else a.shape
    n = b.shape[0] if tb else b.shape[1]
    gemm(octx, a, b, outputs[0], m, n, k, ta, tb, req[0])


def _dot_backward(octx, params, inputs, outputs, req):
    """d(lhs) = g @ op(rhs)^T, d(rhs) = op(lhs)^T @ g, folded back through the transposes."""
    g, a, b = inputs
    ta, tb = params["transpose_a"], params["transpose_b"]
    m, n = g.shape
    k = a.shape[0] if ta else a.shape[1]
    if ta:   # dA (k x m) = op(B) @ g^T
        gemm(octx, b, g, outputs[0], k, m, n, tb, True, req[0])
    else:    # dA (m x k) = g @ op(B)^T
        gemm(octx, g, b, outputs[0], m, k, n, False, not tb, req[0])
    if tb:   # dB (n x k) = g^T @ op(A)
        gemm(octx, g, a, outputs[1], n, k, m, True, ta, req[1])
    else:    # dB (k x n) = op(A)^T @ g
        gemm(octx, a, g, outputs[1], k, n, m, not ta, False, req[1])


def _fc_2d(params, x):
    return (x.shape[0], x.size // max(x.shape[0], 1)) if params["flatten"] else \
        (x.size // max(x.shape[-1], 1), x.shape[-1])


def _fc_applies(params, inputs, outputs, req):
    return float_call(params, inputs, outputs, req) and inputs[0].size > 0


def _fully_connected(octx, params, inputs, outputs, req):
    x, w, y = inputs[0], inputs[1], outputs[0]
    n, k = _fc_2d(params, x)
    h = w.shape[0]
    gemm(octx, x, w, y, n, h, k, False, True, req[0])           # y = x @ w^T
    if not params["no_bias"] and req[0] != "null":
        grid, block = grid_1d(y.size)
        module(FAMILY, y.dtype).get_function("add_row_bias")(y, inputs[2], n, h, grid=grid, block=block,
                                                             stream=stream(octx))


def _fully_connected_backward(octx, params, inputs, outputs, req):
    g, x, w = inputs
    n, k = _fc_2d(params, x)
    h = w.shape[0]
    gemm(octx, g, w, outputs[0], n, k, h, False, False, req[0])      # dx = g @ w
    gemm(octx, g, x, outputs[1], h, k, n, True, False, req[1])       # dw = g^T @ x
    if not params["no_bias"] and req[2] != "null":
        grid, block = grid_1d(h)
        module(FAMILY, g.dtype).get_function("sum_rows")(g, outputs[2], n, h, accumulate(req[2]),
                                                         grid=grid, block=block, stream=stream(octx))


register_kernel("dot", "gpu", _dot, applies=_dot_applies, name="cuda.gemm.dot", exact=False, tol=_TOL)
register_kernel("_backward_dot", "gpu", _dot_backward, applies=_dot_applies, name="cuda.gemm._backward_dot",
                exact=False, tol=_TOL)
register_kernel("FullyConnected", "gpu", _fully_connected, applies=_fc_applies,
                name="cuda.gemm.FullyConnected", exact=False, tol=_TOL)
register_kernel("_backward_FullyConnected", "gpu", _fully_connected_backward, applies=_fc_applies,
                name="cuda.gemm._backward_FullyConnected", exact=False, tol=_TOL)
