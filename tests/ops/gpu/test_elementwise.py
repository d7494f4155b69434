"""GPU elementwise kernels against their numpy references (emulator or real GPU)."""
import numpy as np
import pytest

from mxref.ops.gpu import elementwise as ew
from mxref.ops.gpu.harness import check_gpu_kernel

pytestmark = pytest.mark.timeout(300)

SIZES = [0, 1, 7, 31, 33, 1000]        # empty, below a warp, around a warp, several blocks
rng = np.random.default_rng(11)


def _positive(op):
    return op in ("log", "sqrt", "rsqrt", "reciprocal", "log1p", "_backward_log", "_backward_sqrt",
                  "_backward_rsqrt", "_backward_reciprocal", "_backward_log1p")


@pytest.mark.parametrize("op", sorted(ew.UNARY))
def test_unary(op):
    for n in (0, 7, 33):
        x = rng.standard_normal(n).astype(np.float32)
        if _positive(op):
            x = np.abs(x) + 0.5
        check_gpu_kernel(op, [x])


@pytest.mark.parametrize("op", sorted(ew.UNARY_BACKWARD))
def test_unary_backward(op):
    g = rng.standard_normal(45).astype(np.float32)
    z = rng.standard_normal(45).astype(np.float32)
    if _positive(op):
        z = np.abs(z) + 0.5
    check_gpu_kernel(op, [g, z])


@pytest.mark.parametrize("act", sorted(ew.ACTIVATION))
def test_activation_forward_backward_float32_float64(act):
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((3, 17)).astype(dtype)
        (y, _) = check_gpu_kernel("Activation", [x], {"act_type": act})
        check_gpu_kernel("_backward_Activation", [rng.standard_normal((3, 17)).astype(dtype), y],
                         {"act_type": act})


@pytest.mark.parametrize("n", SIZES)
def test_binary_sizes_and_add_req(n):
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    for op in sorted(ew.BINARY):
        if op == "_power":
            check_gpu_kernel(op, [np.abs(a) + 0.1, b])
        else:
            check_gpu_kernel(op, [a, b])
    start = rng.standard_normal(n).astype(np.float32)
    check_gpu_kernel("elemwise_add", [a, b], req="add", outputs=[start])


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((3, 4), (3, 1)), ((5,), (2, 3, 5)),
                                    ((2, 1, 4, 6, 3), (1, 5, 4, 6, 3)), ((1,), (7,)), ((0, 3), (1, 3)),
                                    ((2, 3, 1), (1,))])
def test_broadcast_corners(shapes):
    a = rng.standard_normal(shapes[0])
    b = rng.standard_normal(shapes[1])
    for op in ("broadcast_add", "broadcast_mul", "broadcast_sub", "broadcast_div", "broadcast_maximum",
               "broadcast_greater", "broadcast_equal"):
        check_gpu_kernel(op, [a.astype(np.float32), b.astype(np.float32)])
    check_gpu_kernel("broadcast_add", [a, b])                  # float64


@pytest.mark.parametrize("op", sorted(ew.BROADCAST))
def test_every_broadcast_op(op):
    a = np.abs(rng.standard_normal((3, 1, 4))).astype(np.float32) + 0.1
    b = rng.standard_normal((1, 5, 4)).astype(np.float32)
    check_gpu_kernel(op, [a, b])


def test_broadcast_collapse_merges_axes():
    dims, (sa, sb) = ew.collapse_broadcast((2, 3, 4, 5), [(2, 3, 4, 5), (1, 1, 4, 5)])
    assert dims == [1, 1, 6, 20] and sa == [0, 0, 20, 1] and sb == [0, 0, 0, 1]
    assert ew.collapse_broadcast((2, 3, 2, 3, 2, 3), [(2, 1, 2, 1, 2, 1), (1, 3, 1, 3, 1, 3)]) is None


def test_broadcast_past_four_axes_is_a_clear_error():
    from mxref.base import MXNetError
    a, b = np.ones((2, 1, 2, 1, 2, 1), np.float32), np.ones((1, 3, 1, 3, 1, 3), np.float32)
    with pytest.raises(MXNetError, match="broadcast_add: no 'gpu' kernel takes inputs"):
        check_gpu_kernel("broadcast_add", [a, b])


@pytest.mark.parametrize("op", sorted(ew.SCALAR))
def test_scalar(op):
    x = np.abs(rng.standard_normal(40)).astype(np.float32) + 0.25
    check_gpu_kernel(op, [x], {"scalar": 1.5})


def test_shape_only_ops_copy_their_bytes():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    check_gpu_kernel("Flatten", [x])
    check_gpu_kernel("Reshape", [x], {"shape": (4, -1)})
    check_gpu_kernel("expand_dims", [x], {"axis": 1})
    check_gpu_kernel("squeeze", [x.reshape(2, 1, 12)])
    check_gpu_kernel("reshape_like", [x, np.zeros((6, 4), np.float32)])
    check_gpu_kernel("_identity_with_attr_like_rhs", [x, x])


def test_fills_and_add_n():
    check_gpu_kernel("_ones", [], {"shape": (2, 33)})
    check_gpu_kernel("zeros_like", [np.ones((5,), np.float64)])
    check_gpu_kernel("_zeros", [], {"shape": (3, 5)})
    check_gpu_kernel("_full", [], {"shape": (37,), "value": 2.5})
    check_gpu_kernel("ones_like", [np.zeros((2, 3), np.float32)])
    xs = [rng.standard_normal((4, 9)).astype(np.float32) for _ in range(6)]
    check_gpu_kernel("add_n", xs, {"num_args": 6})
    check_gpu_kernel("add_n", xs[:2], {"num_args": 2}, req="add", outputs=[np.ones((4, 9), np.float32)])


def test_op_check_harness_takes_the_gpu_too():
    """mxref.op_check.check_kernels(device='gpu') runs the same comparison (and fails on a wrong
    kernel)."""
    from mxref import op_check
    from mxref.ops import registry
    got = op_check.check_kernels("relu", [np.array([-1.0, 2.0], np.float32)], device="gpu")
    assert got["gpu"][0].tolist() == [0.0, 2.0]

    def wrong(octx, params, inputs, outputs, req):
        ew.launch_unary(octx, ew._code("negative"), inputs[0], outputs[0], req[0])
    (k,) = registry.list_kernels("relu", "gpu")
    saved, k.fn = k.fn, wrong
    try:
        with pytest.raises(AssertionError, match="relu gpu vs reference"):
            op_check.check_kernels("relu", [np.array([-1.0, 2.0], np.float32)], device="gpu")
    finally:
        k.fn = saved
