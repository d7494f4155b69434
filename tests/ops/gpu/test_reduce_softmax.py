"""GPU reductions and softmax kernels against their numpy references (emulator or real GPU)."""
import numpy as np
import pytest

from mxref.ops.gpu.harness import check_gpu_kernel
from mxref.ops.gpu.reduce import split_axes

pytestmark = pytest.mark.timeout(300)
rng = np.random.default_rng(5)


def test_split_axes():
    assert split_axes((2, 3, 4), (1,)) == (2, 3, 4)
    assert split_axes((2, 3, 4), (0, 1, 2)) == (1, 24, 1)
    assert split_axes((2, 1, 4), (0, 2)) == (1, 8, 1)      # the size-1 axis between does not matter
    assert split_axes((2, 3, 4), (0, 2)) is None


@pytest.mark.parametrize("shape,axis", [((37,), None), ((5, 7), (1,)), ((5, 7), (0,)), ((3, 300, 2), (1,)),
                                        ((2, 3, 4), (1, 2)), ((4, 1), (0,)), ((1,), None)])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_reductions(op, shape, axis):
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(shape).astype(dtype)
        check_gpu_kernel(op, [x], {"axis": axis})
    check_gpu_kernel(op, [x.astype(np.float32)], {"axis": axis, "keepdims": True})


def test_norms_exclude_and_add_req():
    x = rng.standard_normal((6, 40)).astype(np.float32)
    check_gpu_kernel("norm", [x])
    check_gpu_kernel("norm", [x], {"ord": 1, "axis": (1,)})
    check_gpu_kernel("sum", [x], {"axis": (0,), "exclude": True})
    check_gpu_kernel("sum", [x], {"axis": (1,)}, req="add", outputs=[np.ones(6, np.float32)])
    check_gpu_kernel("sum", [np.zeros((0, 3), np.float32)], {"axis": (0,)})


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argreductions_with_ties(op):
    x = rng.integers(0, 3, size=(9, 70)).astype(np.float32)      # many ties: the first index wins
    check_gpu_kernel(op, [x], {"axis": 1})
    check_gpu_kernel(op, [x], {"axis": 0})
    check_gpu_kernel(op, [x])


@pytest.mark.parametrize("op,backward", [("softmax", "_backward_softmax"),
                                         ("log_softmax", "_backward_log_softmax")])
@pytest.mark.parametrize("shape,axis", [((4, 10), -1), ((3, 5, 2), 1), ((2, 300), 1), ((1, 1), -1)])
def test_softmax_forward_backward(op, backward, shape, axis):
    for dtype in (np.float32, np.float64):
        x = (3 * rng.standard_normal(shape)).astype(dtype)
        (y, _) = check_gpu_kernel(op, [x], {"axis": axis})
        g = rng.standard_normal(shape).astype(dtype)
        check_gpu_kernel(backward, [g, y], {"axis": axis})
    check_gpu_kernel(op, [x.astype(np.float32)], {"axis": axis, "temperature": 2.0})


def test_softmax_output_forward_backward():
    x = rng.standard_normal((7, 10)).astype(np.float32)
    label = rng.integers(0, 10, size=7).astype(np.float32)
    (p, _, _) = check_gpu_kernel("SoftmaxOutput", [x, label])
    check_gpu_kernel("_backward_SoftmaxOutput", [p, label])
    check_gpu_kernel("_backward_SoftmaxOutput", [p, label], {"normalization": "batch", "grad_scale": 0.5})
    label[2] = -1
    check_gpu_kernel("_backward_SoftmaxOutput", [p, label], {"use_ignore": True})


@pytest.mark.parametrize("op,backward", [("sum", "_backward_sum"), ("mean", "_backward_mean")])
def test_reduction_backward(op, backward):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    for axis in [(1,), None, (0, 1)]:
        y = getattr(np, op)(x, axis=axis, keepdims=False)
        y = np.asarray(y, np.float32).reshape(-1) if axis is None else y.astype(np.float32)
        g = rng.standard_normal(y.shape).astype(np.float32)
        check_gpu_kernel(backward, [g, x, y], {"axis": axis})


@pytest.mark.parametrize("shape,axis", [((6, 10), -1), ((3, 4, 5), 1), ((2, 40), 1)])
def test_fused_softmax_cross_entropy(shape, axis):
    x = (2 * rng.standard_normal(shape)).astype(np.float32)
    lshape = tuple(d for i, d in enumerate(shape) if i != axis % len(shape))
    label = rng.integers(-1, shape[axis] + 1, size=lshape).astype(np.float32)     # clipped at both ends
    (loss, _, _) = check_gpu_kernel("_softmax_cross_entropy_pick", [x, label], {"axis": axis})
    g = rng.standard_normal(loss.shape).astype(np.float32)
    check_gpu_kernel("_backward_softmax_cross_entropy_pick", [g, x, label], {"axis": axis})


def test_cast_between_float32_float64_int32():
    x = (rng.standard_normal(50) * 10).astype(np.float32)
    for dtype in ("float64", "int32", "float32"):
        check_gpu_kernel("Cast", [x], {"dtype": dtype})
    check_gpu_kernel("Cast", [x.astype(np.int32)], {"dtype": "float64"})
    check_gpu_kernel("_backward_Cast", [x.astype(np.float64), x], {"dtype": "float64"})
