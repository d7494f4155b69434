"""_softmax_cross_entropy_pick: fused -log_softmax[label] equals log_softmax + pick, value and gradient."""
import numpy as np
import pytest
from nn_check import check_gradient, forward, grads

import mxref as mx
from mxref.base import MXNetError
from mxref.ops import registry

OP = registry.get("_softmax_cross_entropy_pick")


def reference(x, label, axis):
    logp = x - x.max(axis=axis, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(axis=axis, keepdims=True))
    idx = np.clip(label.astype(int), 0, x.shape[axis] - 1)
    return -np.take_along_axis(logp, np.expand_dims(idx, axis), axis).squeeze(axis)


@pytest.mark.parametrize("axis", [-1, 0])
def test_forward_matches_log_softmax_pick(rng, axis):
    """Each row's loss is -log softmax at its label; out-of-range labels clip as pick does."""
    x = rng.standard_normal((6, 5)).astype(np.float32) * 3
    n = x.shape[1 - (axis % 2)]
    label = rng.integers(0, x.shape[axis], n).astype(np.float32)
    label[0] = 99
    (out,) = forward("_softmax_cross_entropy_pick", [x, label], axis=axis)
    assert out.shape == (n,) and out.dtype == np.float32
    np.testing.assert_allclose(out, reference(x, label, axis), rtol=1e-5, atol=1e-6)


def test_gradient_is_softmax_minus_one_hot(rng):
    """d/dx = g * (softmax(x) - onehot(label)), checked numerically; no gradient flows to the label."""
    x = rng.standard_normal((4, 3))
    label = np.array([2, 0, 1, 1], np.float64)
    check_gradient("_softmax_cross_entropy_pick", [x, label], wrt=[0])
    g = rng.standard_normal(4)
    dx, dlabel = grads("_softmax_cross_entropy_pick", [x, label], [g])
    p = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    p[np.arange(4), label.astype(int)] -= 1
    np.testing.assert_allclose(dx, p * g[:, None], rtol=1e-10)
    assert dlabel is None


def test_shapes_and_errors():
    """The output drops the class axis; a label of another size or a bad axis names the operator."""
    p = OP.parse_params({})
    assert OP.infer_shape(p, [(8, 10), None]) == ([(8, 10), (8,)], [(8,)])
    assert OP.infer_shape(p, [(8, 10), (8, 1)])[1] == [(8,)]
    with pytest.raises(MXNetError, match="_softmax_cross_entropy_pick: label shape"):
        OP.infer_shape(p, [(8, 10), (7,)])
    with pytest.raises(MXNetError, match="axis 2 out of range"):
        OP.infer_shape(OP.parse_params({"axis": 2}), [(8, 10), None])


@pytest.mark.parametrize("axis", [1, 0])
def test_matrix_path_equals_the_general_path(rng, axis):
    """A matrix picks its classes by fancy indexing (or, classes on axis 1, runs the C loops);
    a trailing unit axis takes the general take_along_axis path. Loss and gradient agree bit for
    bit between the numpy paths, and to float32 rounding with the C loops (which sum in double);
    labels out of range included."""
    x = rng.standard_normal((7, 5)).astype(np.float32) * 3
    n = x.shape[1 - axis]
    label = rng.integers(0, x.shape[axis], n).astype(np.float32)
    label[0], label[1] = 99, -3
    g = rng.standard_normal(n).astype(np.float32)
    (out2,) = forward("_softmax_cross_entropy_pick", [x, label], axis=axis)
    (out3,) = forward("_softmax_cross_entropy_pick", [x[..., None], label[:, None]], axis=axis)
    dx2, _ = grads("_softmax_cross_entropy_pick", [x, label], [g], axis=axis)
    dx3, _ = grads("_softmax_cross_entropy_pick", [x[..., None], label[:, None]], [g[:, None]], axis=axis)
    p = registry.get("_softmax_cross_entropy_pick").parse_params({"axis": axis})
    fast = registry.fast_kernel_for("_softmax_cross_entropy_pick", "cpu", p, [x, label], [out2], ["write"])
    if fast is None:
        np.testing.assert_array_equal(out2, out3[:, 0])
        np.testing.assert_array_equal(dx2, dx3[..., 0])
    else:
        np.testing.assert_allclose(out2, out3[:, 0], rtol=1e-6)
        np.testing.assert_allclose(dx2, dx3[..., 0], rtol=1e-6, atol=1e-7)


def test_a_variable_label_gets_zeros():
    """A label that asks for a gradient gets zeros, as through log_softmax + pick."""
    x, label = mx.nd.array([[1.0, 2.0, 0.5]]), mx.nd.array([1.0])
    x.attach_grad()
    label.attach_grad()
    label.grad[:] = 7
    with mx.autograd.record():
        loss = mx.nd._internal._softmax_cross_entropy_pick(x, label)
    loss.backward()
    np.testing.assert_array_equal(label.grad.asnumpy(), [0.0])
    p = np.exp([1.0, 2.0, 0.5]) / np.exp([1.0, 2.0, 0.5]).sum()
    np.testing.assert_allclose(x.grad.asnumpy()[0], p - [0, 1, 0], rtol=1e-6)
