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


# -- one card per activation: Activation and the unary ops run the same math ----------------------

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softsign"])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # inf / inf in softsign: NaN, as the reference
def test_activation_and_the_unary_op_give_the_same_bits(rng, act, dtype):
    """``Activation(act_type=act)`` and ``mx.nd.<act>`` run one card: forward bits agree, and so do
    the gradients where both backward ops take the output."""
    import mxref as mx
    from mxref import autograd as ag
    x = np.concatenate([rng.standard_normal(30) * 3, [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    results = []
    for f in (lambda a: mx.nd.Activation(a, act_type=act), getattr(mx.nd, act)):
        a = mx.nd.array(x, dtype=dtype)
        a.attach_grad()
        with ag.record():
            y = f(a)
        y.backward(mx.nd.array(g, dtype=dtype))
        results.append((y.asnumpy(), a.grad.asnumpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    if act != "softsign":      # the unary softsign's backward takes x: (1+|x|)^-2, not (1-|y|)^2
        np.testing.assert_array_equal(results[0][1], results[1][1])


X2 = np.array([-1.3, -0.2, 0.4, 1.1])
_S, _T, _Q = 1 / (1 + np.exp(-X2)), np.tanh(X2), 1 + np.abs(X2)
# act_type: (f', f'') in closed form
SECOND = {
    "relu": ((X2 > 0).astype(float), np.zeros(4)),
    "sigmoid": (_S * (1 - _S), _S * (1 - _S) * (1 - 2 * _S)),
    "tanh": (1 - _T ** 2, -2 * _T * (1 - _T ** 2)),
    "softrelu": (_S, _S * (1 - _S)),
    "softsign": (1 / _Q ** 2, -2 * np.sign(X2) / _Q ** 3),
}


@pytest.mark.parametrize("act", sorted(SECOND))
def test_activation_second_derivative(act):
    """``_backward_Activation`` has a gradient (the card's ``d2_y``), so Activation differentiates
    twice, as the unary ops do."""
    import mxref as mx
    from mxref import autograd as ag
    x = mx.nd.array(X2, dtype="float64")
    x.attach_grad()
    with ag.record():
        (d1,) = ag.grad(mx.nd.Activation(x, act_type=act), [x], create_graph=True)
    d1.backward()
    np.testing.assert_allclose(d1.asnumpy(), SECOND[act][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), SECOND[act][1], rtol=1e-10, atol=1e-12)


def test_the_cards_are_the_only_definitions():
    """Every act_type has a card; the unary ops of the family have no row of their own in the
    elementwise table."""
    from mxref.ops import activations, elemwise
    assert set(activations.CARDS) == set(registry.get("Activation").params["act_type"].choices)
    assert not set(activations.CARDS) & set(elemwise._UNARY)
    assert {c.name for c in activations.CARDS.values() if c.unary} == {"relu", "sigmoid", "tanh", "softsign"}
