"""GPU Convolution (im2col + GEMM) and Pooling against their numpy references."""
import numpy as np
import pytest

from mxref.ops.gpu.harness import check_gpu_kernel

pytestmark = pytest.mark.timeout(300)
rng = np.random.default_rng(4)


@pytest.mark.parametrize("geom", [dict(kernel=(3, 3)), dict(kernel=(3, 3), pad=(1, 1)),
                                  dict(kernel=(2, 3), stride=(2, 1), pad=(1, 0)),
                                  dict(kernel=(3, 3), dilate=(2, 2), pad=(2, 2)), dict(kernel=(1, 1))])
@pytest.mark.parametrize("no_bias", [False, True])
def test_convolution_forward_backward(geom, no_bias):
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3) + geom["kernel"]).astype(np.float32)
    p = dict(geom, num_filter=4, no_bias=no_bias)
    args = [x, w] if no_bias else [x, w, rng.standard_normal(4).astype(np.float32)]
    (y,) = check_gpu_kernel("Convolution", args, p)[:1]
    g = rng.standard_normal(y.shape).astype(np.float32)
    check_gpu_kernel("_backward_Convolution", [g, x, w], p)


def test_convolution_float64_and_add_req():
    x, w, b = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3)), rng.standard_normal(3)
    check_gpu_kernel("Convolution", [x, w, b], {"kernel": (3, 3), "num_filter": 3})
    g = rng.standard_normal((1, 3, 3, 3))
    outs = [rng.standard_normal(a.shape) for a in (x, w, b)]
    check_gpu_kernel("_backward_Convolution", [g, x, w], {"kernel": (3, 3), "num_filter": 3}, req="add",
                     outputs=outs)


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
@pytest.mark.parametrize("geom", [dict(kernel=(2, 2), stride=(2, 2)),
                                  dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1)),
                                  dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full"),
                                  dict(global_pool=True)])
def test_pooling_forward_backward(pool_type, geom):
    x = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    p = dict(geom, pool_type=pool_type)
    (y,) = check_gpu_kernel("Pooling", [x], p)[:1]
    g = rng.standard_normal(y.shape).astype(np.float32)
    check_gpu_kernel("_backward_Pooling", [g, x, y], p)


def test_avg_pooling_without_padding_in_the_count():
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    p = dict(kernel=(3, 3), pad=(1, 1), pool_type="avg", count_include_pad=False)
    (y,) = check_gpu_kernel("Pooling", [x], p)[:1]
    check_gpu_kernel("_backward_Pooling", [np.ones_like(y), x, y], p)
