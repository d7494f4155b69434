"""SoftmaxOutput: softmax forward, (p - onehot) gradient with every normalization mode, vs MXNet."""
import numpy as np
import pytest
from nn_check import check_fixture, fixture_cases, forward, grads

from mxref.base import MXNetError
from mxref.ops import registry

CASES = fixture_cases("SoftmaxOutput")
OP = registry.get("SoftmaxOutput")


@pytest.mark.parametrize("name", sorted(set(CASES) - {"out_grad"}))
def test_matches_mxnet(name):
    """Forward and data gradient equal MXNet 1.9.1's (normalization, ignore, multi_output, smoothing)."""
    check_fixture("SoftmaxOutput", CASES[name])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_is_p_minus_onehot(rng, dtype):
    """Default gradient is softmax - onehot(label), not divided by the batch; label grad is None."""
    x = rng.standard_normal((5, 4)).astype(dtype)
    lab = np.array([0, 3, 1, 1, 2], dtype)
    (p,) = forward("SoftmaxOutput", [x, lab])
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(1, keepdims=True), rtol=1e-6)
    gd, gl = grads("SoftmaxOutput", [x, lab])
    assert gd.dtype == dtype and gl is None
    np.testing.assert_allclose(gd, p - np.eye(4)[lab.astype(int)], rtol=1e-6, atol=1e-7)


def test_label_shape_inference():
    """The label shape is inferred from the data (class axis removed) and checked."""
    p = OP.parse_params({})
    assert OP.infer_shape(p, [(8, 10), None]) == ([(8, 10), (8,)], [(8, 10)])
    pm = OP.parse_params({"multi_output": True})
    assert OP.infer_shape(pm, [(2, 3, 4, 5), None])[0][1] == (2, 20)
    assert OP.infer_shape(pm, [(2, 3, 4, 5), (2, 4, 5)])[0][1] == (2, 4, 5)
    with pytest.raises(MXNetError, match="SoftmaxOutput.*label"):
        OP.infer_shape(p, [(8, 10), (7,)])


def test_is_loss_layer_and_alias():
    """SoftmaxOutput starts backward without head gradients; 'Softmax' is its old name."""
    assert OP.loss_layer and registry.get("Softmax") is OP


def test_out_grad_multiplies_head_gradient():
    """out_grad=True multiplies by the head gradient. MXNet 1.9.1 multiplies by the output instead
    (a defect, see the op docstring); the fixture records that so the difference stays visible."""
    c = CASES["out_grad"]
    p, lab, og = c["out0"], c["in_label"].astype(int), c["ograd0"]
    (gd, _) = grads("SoftmaxOutput", [c["in_data"], c["in_label"]], [og], out_grad=True)
    np.testing.assert_allclose(gd, (p - np.eye(5)[lab]) * og, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c["grad_data"], (p - np.eye(5)[lab]) * p, rtol=1e-5, atol=1e-6)
