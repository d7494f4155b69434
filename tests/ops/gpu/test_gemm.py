"""The tiled GEMM behind dot and FullyConnected, against the numpy references."""
import numpy as np
import pytest

from mxref.ops.gpu.harness import check_gpu_kernel

pytestmark = pytest.mark.timeout(300)
rng = np.random.default_rng(3)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 7, 3), (16, 16, 16), (33, 20, 17), (2, 40, 1)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_dot_forward_backward(m, k, n, ta, tb):
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    p = {"transpose_a": ta, "transpose_b": tb}
    check_gpu_kernel("dot", [a, b], p)
    check_gpu_kernel("_backward_dot", [rng.standard_normal((m, n)).astype(np.float32), a, b], p)


def test_dot_float64_add_req_and_empty():
    a, b = rng.standard_normal((9, 21)), rng.standard_normal((21, 4))
    check_gpu_kernel("dot", [a, b])
    check_gpu_kernel("dot", [a.astype(np.float32), b.astype(np.float32)], req="add",
                     outputs=[np.ones((9, 4), np.float32)])
    check_gpu_kernel("dot", [np.zeros((0, 3), np.float32), np.zeros((3, 2), np.float32)])


@pytest.mark.parametrize("no_bias", [False, True])
@pytest.mark.parametrize("shape", [(4, 10), (3, 2, 5, 5)])
def test_fully_connected_forward_backward(no_bias, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    k = int(np.prod(shape[1:]))
    w = rng.standard_normal((6, k)).astype(np.float32)
    args = [x, w] if no_bias else [x, w, rng.standard_normal(6).astype(np.float32)]
    p = {"num_hidden": 6, "no_bias": no_bias}
    check_gpu_kernel("FullyConnected", args, p)
    g = rng.standard_normal((shape[0], 6)).astype(np.float32)
    check_gpu_kernel("_backward_FullyConnected", [g, x, w], p)


def test_gemm_path():
    """The emulator runs the tiled teaching kernel; a real GPU runs cuBLAS where it loads."""
    from mxref._ext.cuda import runtime
    from mxref.ops.gpu.gemm import gemm_path
    if runtime.backend().name == "emulate":
        assert gemm_path() == "tiled"
    else:
        assert gemm_path() in ("tiled", "cublas")
