"""Regression outputs, MakeLoss and BlockGrad: forward values and the gradients MXNet 1.9.1 gives."""
import numpy as np
import pytest
from nn_check import forward, grads

import mxref as mx
from mxref.ops import registry

REG = ["LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", REG)
def test_regression_outputs(rng, op, dtype):
    """Gradient is grad_scale/K * (out - label) (sign of it for MAE), K = outputs per sample."""
    x = rng.standard_normal((4, 3)).astype(dtype)
    lab = rng.standard_normal((4, 3)).astype(dtype)
    (out,) = forward(op, [x, lab])
    want = 1 / (1 + np.exp(-x)) if op.startswith("Logistic") else x
    np.testing.assert_allclose(out, want, rtol=1e-6)
    dx, dl = grads(op, [x, lab], grad_scale=2.0)
    assert dl is None and dx.dtype == dtype
    diff = np.sign(out - lab) if op.startswith("MAE") else out - lab
    np.testing.assert_allclose(dx, 2.0 / 3 * diff, rtol=1e-5, atol=1e-7)
    assert registry.get(op).loss_layer


def test_regression_label_shape():
    """Data (N, 1) takes a label (N,); otherwise the label is shaped like the data."""
    op = registry.get("LinearRegressionOutput")
    p = op.parse_params({})
    assert op.infer_shape(p, [(4, 1), None])[0] == [(4, 1), (4,)]
    assert op.infer_shape(p, [(4, 3, 2), None])[0] == [(4, 3, 2), (4, 3, 2)]
    (dx, _) = grads("LinearRegressionOutput", [np.ones((4, 1)), np.zeros(4)])
    np.testing.assert_allclose(dx, np.ones((4, 1)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw,scale", [({}, 1.0), ({"normalization": "batch"}, 0.5),
                                      ({"normalization": "valid", "valid_thresh": 0.2}, 1 / 3),
                                      ({"normalization": "valid", "grad_scale": 3}, 0.75)])
def test_make_loss(kw, scale, dtype):
    """MakeLoss is the identity with gradient grad_scale / n (numbers from MXNet 1.9.1)."""
    x = np.array([[0.5, -1, 2], [0.1, 0.0, 3]], dtype)
    (out,) = forward("MakeLoss", [x], **kw)
    np.testing.assert_array_equal(out, x)
    (dx,) = grads("MakeLoss", [x], **kw)
    assert dx.dtype == dtype
    np.testing.assert_allclose(dx, np.full(x.shape, scale), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_grad(rng, dtype):
    """BlockGrad / stop_gradient pass values through and return no gradient (zeros)."""
    x = rng.standard_normal(5).astype(dtype)
    np.testing.assert_array_equal(forward("BlockGrad", [x])[0], x)
    assert grads("stop_gradient", [x], [np.ones(5, dtype)]) == [None]
    assert registry.get("stop_gradient") is registry.get("BlockGrad")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_make_loss_unary_form(dtype):
    """make_loss: identity, gradient ones (the head gradient is ignored), output named 'loss'."""
    x = np.array([[0.5, -1, 2], [0.1, 0.0, 3]], dtype)
    (out,) = forward("make_loss", [x])
    np.testing.assert_array_equal(out, x)
    (dx,) = grads("make_loss", [x], [np.full(x.shape, 7, dtype)])
    np.testing.assert_array_equal(dx, np.ones_like(x))
    # symbolic: a loss head, so backward() needs no head gradient; d(sum x^2)/dx through it = 2x
    loss = mx.sym.make_loss(mx.sym.square(mx.sym.var("x")))
    assert loss.list_outputs()[0].endswith("_loss")
    ex = loss.simple_bind(mx.cpu(), x=(2, 3), type_dict={"x": dtype})
    ex.forward(is_train=True, x=mx.nd.array(x, dtype=dtype))
    ex.backward()
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 2 * x, rtol=1e-6)
    assert loss.infer_shape(x=(2, 3))[1] == [(2, 3)]


@pytest.mark.parametrize("op", ["LinearRegressionOutput", "LogisticRegressionOutput",
                                "MAERegressionOutput"])
def test_regression_backward_node_has_data_and_label_grads(op):
    """As in MXNet, ``_backward_<op>`` gives two outputs; the label's gradient is zero."""
    bwd = registry.get("_backward_" + op)
    p = bwd.parse_params({})
    assert bwd.list_outputs(p) == ["data_grad", "label_grad"]
    out, lab = np.array([[0.5, 2.0]], np.float32), np.array([[1.0, 1.0]], np.float32)
    outputs = [np.empty_like(out), np.full_like(lab, 7)]
    bwd.fcompute(None, p, [out, lab], outputs, ["write", "write"])
    np.testing.assert_array_equal(outputs[1], 0)
    exe = getattr(mx.sym, op)(mx.sym.Variable("x"), mx.sym.Variable("y")).simple_bind(
        mx.cpu(), x=(1, 2), y=(1, 2), grad_req={"x": "write", "y": "null"})
    exe.forward(is_train=True, x=mx.nd.array(out), y=mx.nd.array(lab))
    exe.backward()
    assert exe.grad_dict["x"].shape == (1, 2)
