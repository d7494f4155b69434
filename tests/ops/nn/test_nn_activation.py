"""Activation: each act_type forward in float32/float64, gradient through the output, in-place."""
import numpy as np
import pytest
from nn_check import check_gradient, forward, grads

from mxref.base import MXNetError
from mxref.ops import registry

ACTS = ["relu", "sigmoid", "tanh", "softrelu", "softsign"]
REF = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("act", ACTS)
def test_forward(rng, act, dtype):
    """Each activation matches its formula and keeps the dtype."""
    x = rng.standard_normal((3, 4)).astype(dtype)
    (y,) = forward("Activation", [x], act_type=act)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, REF[act](x.astype(np.float64)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("act", ACTS)
def test_gradient(rng, act):
    """The gradient computed from the output agrees with central differences."""
    x = rng.standard_normal((3, 5))
    x[np.abs(x) < 1e-3] = 0.5  # keep away from relu's kink
    check_gradient("Activation", [x], act_type=act)


def test_backward_uses_output_not_input(rng):
    """_backward_Activation's inputs are (ograd, forward output): the input may be overwritten."""
    from mxref.graph import Node, NodeEntry, make_node
    x = Node(None, "x")
    fwd = make_node("Activation", [NodeEntry(x)], "act", attrs={"act_type": "tanh"})
    (g,) = fwd.op.gradient(fwd, [NodeEntry(Node(None, "og"))])
    assert g.node.op.name == "_backward_Activation"
    assert g.node.inputs[1].node is fwd and g.node.op.inplace == ((0, 0),)
    assert fwd.op.inplace == ((0, 0),)


def test_req_add_accumulates(rng):
    """req='add' adds into the output buffer instead of overwriting it."""
    op = registry.get("Activation")
    p = op.parse_params({"act_type": "relu"})
    x = rng.standard_normal(6)
    out = np.ones(6)
    op.fcompute(None, p, [x], [out], ["add"])
    np.testing.assert_allclose(out, 1 + np.maximum(x, 0))
    g = grads("Activation", [x], [np.ones(6)], act_type="relu")[0]
    np.testing.assert_array_equal(g, (x > 0).astype(float))


def test_bad_act_type():
    """An unknown act_type is rejected with the op and argument named."""
    with pytest.raises(MXNetError, match="Activation.*act_type"):
        registry.get("Activation").parse_params({"act_type": "swish"})
