"""GPU data movement (transpose, slice, Concat), Embedding/take with atomics, Dropout's Philox mask,
Adam, and 2-bit compression, against the references."""
import numpy as np
import pytest

import mxref as mx
from mxref.kvstore import compression as host
from mxref.ops.gpu import compression as gpu
from mxref.ops.gpu.harness import check_gpu_kernel, to_device

pytestmark = pytest.mark.timeout(200)
rng = np.random.default_rng(12)


@pytest.mark.parametrize("shape,axes", [((3, 4), ()), ((2, 3, 4), (1, 0, 2)), ((2, 3, 4, 5), (3, 1, 0, 2)),
                                        ((1, 7), ()), ((2, 1, 3, 1, 2, 2), (5, 4, 3, 2, 1, 0))])
def test_transpose(shape, axes):
    check_gpu_kernel("transpose", [rng.standard_normal(shape).astype(np.float32)], {"axes": axes})


def test_slices_and_their_backward():
    x = rng.standard_normal((5, 6, 7)).astype(np.float32)
    check_gpu_kernel("slice", [x], {"begin": (1, None, 6), "end": (4, 5, 0), "step": (2, None, -2)})
    check_gpu_kernel("slice", [x], {"begin": (-2,), "end": (None,)})
    check_gpu_kernel("slice_axis", [x], {"axis": 1, "begin": 2, "end": -1})
    g = rng.standard_normal((5, 3, 7)).astype(np.float32)
    check_gpu_kernel("_backward_slice_axis", [g, x], {"axis": 1, "begin": 2, "end": -1})


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_concat_and_backward(dim):
    parts = [rng.standard_normal((2, 3, 4)).astype(np.float32) for _ in range(3)]
    (y,) = check_gpu_kernel("Concat", parts, {"num_args": 3, "dim": dim})[:1]
    check_gpu_kernel("_backward_Concat", [rng.standard_normal(y.shape).astype(np.float32), *parts],
                     {"num_args": 3, "dim": dim})


def test_embedding_and_take_with_repeated_rows():
    w = rng.standard_normal((10, 6)).astype(np.float32)
    idx = np.array([[1, 3, 3], [9, 1, 12]], np.float32)           # repeats, and one past the end (clipped)
    (y,) = check_gpu_kernel("Embedding", [idx, w], {"input_dim": 10, "output_dim": 6})[:1]
    check_gpu_kernel("_backward_Embedding", [rng.standard_normal(y.shape).astype(np.float32), idx],
                     {"input_dim": 10, "output_dim": 6})
    a = rng.standard_normal((8, 2, 3)).astype(np.float32)
    for mode in ("clip", "wrap"):
        ii = np.array([0, 7, -1, 9, 7], np.float32)
        (t,) = check_gpu_kernel("take", [a, ii], {"mode": mode})[:1]
        g = rng.standard_normal(t.shape).astype(np.float32)
        check_gpu_kernel("_backward_take", [g, a, ii], {"mode": mode})


def test_dropout_mask_statistics_reproducibility_and_backward():
    x = mx.nd.ones((200, 50), ctx=mx.gpu(0))
    with mx.autograd.record():
        mx.random.seed(42)
        y1 = mx.nd.Dropout(x, p=0.3)
    mx.random.seed(42)
    with mx.autograd.record():
        y2 = mx.nd.Dropout(x, p=0.3)
    a, b = y1.asnumpy(), y2.asnumpy()
    np.testing.assert_array_equal(a, b)                            # same seed, same mask
    kept = a != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(a[kept], 1 / 0.7, rtol=1e-6)
    z = mx.nd.Dropout(x, p=0.3, axes=(1,), mode="always").asnumpy()     # one mask value per row
    assert all(len(set(row)) == 1 for row in z)
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.3).asnumpy(), np.ones((200, 50)))   # not training
    g = rng.standard_normal((4, 5)).astype(np.float32)
    mask = (rng.random((4, 5)) > 0.5).astype(np.float32) * 2
    check_gpu_kernel("_backward_Dropout", [g, mask], {"p": 0.5})
    check_gpu_kernel("Dropout", [g], {"p": 0.5})            # not training: the identity, a mask of ones


def test_adam_update():
    w, g, m = (rng.standard_normal(77).astype(np.float32) for _ in range(3))
    v = rng.random(77).astype(np.float32)
    check_gpu_kernel("adam_update", [w, g, m, v], {"lr": 0.01, "wd": 0.1, "clip_gradient": 0.5})


@pytest.mark.parametrize("n", [1, 15, 16, 17, 100])
def test_2bit_compression_bit_compatible_with_the_host(n):
    grad = (rng.standard_normal(n) * 0.8).astype(np.float32)
    res = (rng.standard_normal(n) * 0.3).astype(np.float32)
    h_res, d_res = res.copy(), to_device(res)
    h_out = host.quantize_2bit(grad, h_res, 0.5)
    d_out = to_device(np.zeros((n + 15) // 16, np.float32))
    gpu.quantize_2bit(to_device(grad), d_res, 0.5, d_out)
    assert h_out.view(np.uint32).tolist() == d_out.get().view(np.uint32).tolist()
    np.testing.assert_array_equal(d_res.get(), h_res)
    d_back = to_device(np.zeros(n, np.float32))
    gpu.dequantize_2bit(d_out, 0.5, d_back)
    np.testing.assert_array_equal(d_back.get(), host.dequantize_2bit(h_out, 0.5, np.zeros(n, np.float32)))


def test_device_kvstore_with_2bit_compression_on_gpus():
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, mx.nd.zeros((3, 4), ctx=mx.gpu(0)))
    kv.push(0, [mx.nd.ones((3, 4), ctx=mx.gpu(i)) * 0.7 for i in range(2)])
    out = mx.nd.zeros((3, 4), ctx=mx.gpu(1))
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full((3, 4), 1.0, np.float32))    # 0.5 + 0.5
