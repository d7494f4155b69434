"""SVMOutput (a loss layer with hinge gradients) and Crop (window of NCHW data)."""
import numpy as np
import pytest
from nn_check import check_gradient, forward, grads

import mxref as mx
from mxref.base import MXNetError


def svm_grad_ref(x, label, margin, c, linear):
    g = np.zeros_like(x)
    for n in range(x.shape[0]):
        for j in range(x.shape[1]):
            if j == int(label[n]):
                g[n, j] = -c * (margin > x[n, j]) if linear else -2 * c * max(margin - x[n, j], 0)
            else:
                g[n, j] = c * (margin > -x[n, j]) if linear else 2 * c * max(margin + x[n, j], 0)
    return g


@pytest.mark.parametrize("linear", [False, True])
def test_svm_output(rng, linear):
    """Forward is the identity; backward ignores the head gradient and gives the hinge gradient."""
    x = rng.standard_normal((5, 4)) * 2
    label = np.array([0, 3, 1, 1, 2.0])
    (y,) = forward("SVMOutput", [x, label], use_linear=linear, margin=0.5, regularization_coefficient=0.3)
    np.testing.assert_array_equal(y, x)
    g = grads("SVMOutput", [x, label], [rng.standard_normal(x.shape)], use_linear=linear, margin=0.5,
              regularization_coefficient=0.3)
    np.testing.assert_allclose(g[0], svm_grad_ref(x, label, 0.5, 0.3, linear))
    assert g[1] is None


def test_svm_output_module_style():
    """The symbol is a loss layer: backward runs without head gradients; label shape is inferred."""
    s = mx.sym.SVMOutput(mx.sym.var("data"), name="svm")
    assert s.list_arguments() == ["data", "svm_label"]
    assert s.infer_shape(data=(3, 4))[0] == [(3, 4), (3,)]
    x = np.array([[0.2, -0.4], [1.5, 0.1]], np.float32)
    ex = s.simple_bind(mx.cpu(), data=(2, 2))
    ex.forward(is_train=True, data=x, svm_label=np.array([1, 0]))
    ex.backward()
    want = svm_grad_ref(x, [1, 0], 1.0, 1.0, False)
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), want, rtol=1e-6)


def test_crop_forward_and_gradient(rng):
    """h_w with offset, crop_like with center_crop; the gradient pads the window with zeros."""
    x = rng.standard_normal((2, 3, 6, 7))
    (y,) = forward("Crop", [x], num_args=1, h_w=(3, 4), offset=(2, 1))
    np.testing.assert_array_equal(y, x[:, :, 2:5, 1:5])
    like = np.zeros((1, 1, 2, 3))
    (z,) = forward("Crop", [x, like], num_args=2, center_crop=True)
    np.testing.assert_array_equal(z, x[:, :, 2:4, 2:5])
    check_gradient("Crop", [x], num_args=1, h_w=(3, 4), offset=(2, 1))
    check_gradient("Crop", [x, like], wrt=[0], num_args=2, center_crop=True)


def test_crop_nd_sym_and_errors():
    """num_args comes from the inputs; a window that does not fit names the argument."""
    x = mx.nd.array(np.arange(2 * 5 * 5).reshape(1, 2, 5, 5))
    y = mx.nd.Crop(x, mx.nd.zeros((1, 1, 2, 2)), offset=(1, 2))
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy()[:, :, 1:3, 2:4])
    s = mx.sym.Crop(mx.sym.var("a"), mx.sym.var("b"), name="c")
    assert s.list_arguments() == ["a", "b"]
    assert s.infer_shape(a=(1, 2, 5, 5), b=(3, 3, 2, 4))[1] == [(1, 2, 2, 4)]
    with pytest.raises(MXNetError, match="Crop: offset"):
        mx.sym.Crop(mx.sym.var("a"), num_args=1, h_w=(2, 2), offset=(4, 0)).infer_shape(a=(1, 2, 5, 5))
    with pytest.raises(MXNetError, match="Crop: 'data' must be 4-D"):
        mx.sym.Crop(mx.sym.var("a"), num_args=1, h_w=(2, 2)).infer_shape(a=(5, 5))
