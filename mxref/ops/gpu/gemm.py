"""GPU kernels built on one GEMM entry point, ``gemm()``: ``dot`` (2-D) and ``FullyConnected``
forward and backward (and Convolution, ``conv.py``).

``gemm()`` runs the tiled teaching kernel of ``kernels/gemm.cu`` (the reference of the GPU path,
and the only one under the emulator), or cuBLAS through ctypes on a real GPU when ``libcublas``
loads (``MXREF_CUDA_CUBLAS=0`` keeps the teaching kernel there too)."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

from ...base import MXNetError
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
    blas = _cublas()
    if blas is not None and c.dtype.name in ("float32", "float64"):
        blas.gemm(octx, a, b, c, m, n, k, trans_a, trans_b, alpha, beta)
        return
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    module(FAMILY, c.dtype).get_function("gemm_tiled")(
        a, b, c, m, n, k, int(trans_a), int(trans_b), alpha, beta, grid=grid, block=(TILE, TILE),
        stream=stream(octx))


class _CuBLAS:
    """``cublas{S,D}gemm`` through ctypes, one handle per (device, thread), on the op's stream.

    Row-major ``C = op(A) op(B)`` is column-major ``C^T = op(B)^T op(A)^T``: the same memory, with
    the operands swapped, so no transposing copy is needed."""

    def __init__(self, lib):
        self.lib = lib
        self.handles = {}
        self.lock = threading.Lock()

    def _handle(self, device_id: int, stream):
        key = (device_id, threading.get_ident())
        h = self.handles.get(key)
        if h is None:
            h = ctypes.c_void_p()
            if self.lib.cublasCreate_v2(ctypes.byref(h)) != 0:
                raise MXNetError("cublasCreate failed")
            with self.lock:
                self.handles[key] = h
        raw = getattr(getattr(stream, "handle", None), "handle", None)
        self.lib.cublasSetStream_v2(h, ctypes.c_void_p(raw or 0))
        return h

    def gemm(self, octx, a, b, c, m, n, k, trans_a, trans_b, alpha, beta):
        from ..._ext.cuda import runtime  # noqa: PLC0415
        be = runtime.backend()
        st = stream(octx)
        double = c.dtype.name == "float64"
        scal = ctypes.c_double if double else ctypes.c_float
        fn = self.lib.cublasDgemm_v2 if double else self.lib.cublasSgemm_v2
        lda = m if trans_a else k
        ldb = k if trans_b else n
        with be._on(c.device_id):
            h = self._handle(c.device_id, st)
            rc = fn(h, int(trans_b), int(trans_a), n, m, k, ctypes.byref(scal(alpha)), ctypes.c_void_p(b.ptr),
                    ldb, ctypes.c_void_p(a.ptr), lda, ctypes.byref(scal(beta)), ctypes.c_void_p(c.ptr), n)
            if rc != 0:
                raise MXNetError(f"cublas gemm ({m}x{n}x{k}) failed with status {rc}")
            st.synchronize()


_CUBLAS = []


def _cublas():
    """The cuBLAS path, or ``None`` (the emulator, no libcublas, or ``MXREF_CUDA_CUBLAS=0``)."""
    if not _CUBLAS:
        from ..._ext.cuda import runtime  # noqa: PLC0415
        lib = None
        if runtime.backend().name == "pycuda" and os.environ.get("MXREF_CUDA_CUBLAS", "1") != "0":
            path = ctypes.util.find_library("cublas")
            lib = _CuBLAS(ctypes.CDLL(path)) if path else None
        _CUBLAS.append(lib)
    return _CUBLAS[0]


def gemm_path() -> str:
    """``'cublas'`` or ``'tiled'``: which GEMM ``gemm()`` runs (for mxref.info() and tests)."""
    return "cublas" if _cublas() is not None else "tiled"


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
