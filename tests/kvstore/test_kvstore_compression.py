"""2-bit gradient compression: MXNet's bit layout, residual feedback over steps, the device store's
compressed pushes against MXNet 1.9.1 numbers, and parameter validation.
"""
import os

import numpy as np
import pytest

import mxref as mx
from mxref import kvstore as kv
from mxref.kvstore.compression import (
    GradientCompression,
    compressed_size,
    dequantize_2bit,
    quantize_2bit,
)

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "kvstore", "kvstore_mxnet191.npz")


def _reference_step(grad, residual, t):
    """Elementwise loop, written independently of the vectorized kernel: what the receiver sees."""
    sent = np.zeros_like(grad)
    for i in range(grad.size):
        residual.flat[i] = np.float32(residual.flat[i] + grad.flat[i])
        if residual.flat[i] >= t:
            sent.flat[i] = t
            residual.flat[i] = np.float32(residual.flat[i] - t)
        elif residual.flat[i] <= -t:
            sent.flat[i] = -t
            residual.flat[i] = np.float32(residual.flat[i] + t)
    return sent


def test_bit_layout_matches_mxnet():
    """Value i sits in float i//16, byte (i%16)//4, bits 7-2c..6-2c (c = i%4): 11 = +t, 10 = -t."""
    grad = np.zeros(20, dtype=np.float32)
    grad[0], grad[1], grad[5], grad[17] = 1.0, -1.0, 1.0, -1.0
    packed = quantize_2bit(grad, np.zeros(20, np.float32), 0.5)
    assert packed.dtype == np.float32 and packed.shape == (compressed_size(20),) == (2,)
    raw = packed.view(np.uint8)
    assert raw[0] == 0b11100000            # values 0 (+) and 1 (-) in the first byte
    assert raw[1] == 0b00110000            # value 5: byte 1, second pair
    assert raw[4] == 0b00100000            # value 17: second float, first byte, second pair
    assert raw[[2, 3, 5, 6, 7]].sum() == 0


@pytest.mark.parametrize("n", [1, 16, 35, 1000])
def test_residual_accumulates_over_steps(n):
    """Over several steps the dequantized values follow the elementwise reference exactly, and
    sent + residual always equals the sum of the gradients so far (nothing is lost)."""
    rng = np.random.default_rng(n)
    t = np.float32(0.4)
    residual = np.zeros(n, np.float32)
    ref_residual = np.zeros(n, np.float32)
    total_sent = np.zeros(n, np.float64)
    total_grad = np.zeros(n, np.float64)
    for _ in range(6):
        grad = rng.uniform(-0.7, 0.7, n).astype(np.float32)
        expect = _reference_step(grad, ref_residual, t)
        got = dequantize_2bit(quantize_2bit(grad, residual, t), t, np.empty(n, np.float32))
        np.testing.assert_array_equal(got, expect)
        np.testing.assert_array_equal(residual, ref_residual)
        total_sent += got
        total_grad += grad
        np.testing.assert_allclose(total_sent + residual, total_grad, atol=1e-5)
    assert np.abs(residual).max() < t + 0.7


def test_kernel_argument_errors():
    """Wrong sizes or dtypes raise MXNetError naming the function."""
    with pytest.raises(mx.MXNetError, match="quantize_2bit: only float32"):
        quantize_2bit(np.zeros(4), np.zeros(4), 0.5)
    with pytest.raises(mx.MXNetError, match="residual has 3 elements"):
        quantize_2bit(np.zeros(4, np.float32), np.zeros(3, np.float32), 0.5)
    with pytest.raises(mx.MXNetError, match="cannot hold 40 values"):
        dequantize_2bit(np.zeros(2, np.float32), 0.5, np.zeros(40, np.float32))


def test_parse_params():
    """type is required and must be '2bit'; threshold defaults to 0.5, may be text, must be > 0."""
    assert GradientCompression.parse({"type": "2bit", "threshold": "0.25"}).threshold == 0.25
    assert GradientCompression.parse({"type": "2bit"}).threshold == 0.5
    for params, msg in [({"threshold": 1}, "needs a 'type'"), ({"type": "none"}, "Unknown type"),
                        ({"type": "2bit", "threshold": -1}, "greater than 0"),
                        ({"type": "2bit", "threshold": "x"}, "must be a number"),
                        ({"type": "2bit", "beta": 1}, "unknown parameter"), ("2bit", "must be a dict")]:
        with pytest.raises(mx.MXNetError, match=msg):
            GradientCompression.parse(params)


@pytest.mark.parametrize("with_sgd", [False, True], ids=["replace", "sgd"])
def test_device_store_matches_mxnet(any_engine, with_sgd):
    """Two CPU devices push for four steps with threshold 0.5: pulled values equal MXNet 1.9.1's."""
    data = np.load(FIXTURE)
    grads = data["grads"]
    store = kv.create("device")
    store.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    if with_sgd:
        store.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    shape = grads.shape[2:]
    store.init(3, mx.nd.ones(shape))
    for step in range(grads.shape[0]):
        store.push(3, [mx.nd.array(grads[step, d], ctx=mx.cpu(d)) for d in range(grads.shape[1])])
        out = mx.nd.zeros(shape)
        store.pull(3, out=out)
        expect = data["sgd" if with_sgd else "replace"][step]
        np.testing.assert_array_equal(out.asnumpy(), expect)


def test_single_value_is_compressed_too(any_engine):
    """One source is quantized as well (MXNet does not skip it), residual carried per key."""
    store = kv.create("device")
    store.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    store.init(0, mx.nd.zeros((4,)))
    got = []
    for _ in range(3):
        store.push(0, mx.nd.array([0.3, 0.6, -0.7, 0.1]))
        out = mx.nd.zeros((4,))
        store.pull(0, out=out)
        got.append(out.asnumpy().tolist())
    # the numbers MXNet 1.9.1 prints for the same pushes
    assert got == [[0, 0.5, -0.5, 0], [0.5, 0.5, -0.5, 0], [0, 0.5, -0.5, 0]]


def test_compression_needs_float32():
    """A compressed push of float16 values raises at the call, naming the key."""
    store = kv.create("device")
    store.set_gradient_compression({"type": "2bit"})
    store.init("h", mx.nd.zeros((4,), dtype="float16"))
    with pytest.raises(mx.MXNetError, match="needs float32 values; key 'h' holds float16"):
        store.push("h", mx.nd.zeros((4,), dtype="float16"))
