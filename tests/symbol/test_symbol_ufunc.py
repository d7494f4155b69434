"""mx.sym.pow / power / maximum / minimum / hypot: Symbol-Symbol, Symbol-number and number-number."""
import math

import numpy as np
import pytest

import mxref as mx


def _run(sym, **arrays):
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in arrays.items()})
    return exe.forward()[0].asnumpy()


A = np.array([[1.0, 4.0], [-2.0, 3.0]], dtype=np.float32)
B = np.array([[2.0, 2.0], [-1.0, 0.5]], dtype=np.float32)


@pytest.mark.parametrize("name, ref", [
    ("maximum", np.maximum), ("minimum", np.minimum), ("hypot", np.hypot),
    ("pow", lambda a, b: np.abs(a) ** b), ("power", lambda a, b: np.abs(a) ** b)])
def test_symbol_symbol_and_scalar_forms(name, ref):
    """Two Symbols use the element-wise op; a number on either side the scalar op."""
    fn = getattr(mx.sym, name)
    a, b = mx.sym.var("a"), mx.sym.var("b")
    x = np.abs(A) if name in ("pow", "power") else A
    np.testing.assert_allclose(_run(fn(a, b), a=x, b=B), ref(x, B), rtol=1e-6)
    np.testing.assert_allclose(_run(fn(a, 2.0), a=x), ref(x, np.float32(2.0)), rtol=1e-6)
    np.testing.assert_allclose(_run(fn(3.0, a), a=x), ref(np.float32(3.0), x), rtol=1e-6)


def test_node_ops_match_mxnet():
    """The graph holds MXNet's operators (and names), so saved JSON matches MXNet's."""
    a, b = mx.sym.var("a"), mx.sym.var("b")
    assert '"op": "_maximum"' in mx.sym.maximum(a, b).tojson()
    assert mx.sym.maximum(a, 2).name.startswith("_maximumscalar")
    assert mx.sym.pow(2, a).name.startswith("_rpowerscalar")
    assert mx.sym.hypot(a, 1).name.startswith("_hypotscalar")


def test_numbers_computed_in_python():
    assert mx.sym.maximum(2, 3) == 3 and mx.sym.minimum(2, 3) == 2
    assert mx.sym.pow(2, 3) == 8 and mx.sym.power(2, 0.5) == 2 ** 0.5
    assert mx.sym.hypot(3, 4) == math.hypot(3, 4)


def test_gradient_of_maximum():
    """d max(a, b)/da is 1 where a wins, else 0."""
    a, b = mx.sym.var("a"), mx.sym.var("b")
    exe = mx.sym.maximum(a, b).simple_bind(mx.cpu(), a=A.shape, b=B.shape)
    exe.forward(is_train=True, a=mx.nd.array(A), b=mx.nd.array(B))
    exe.backward(mx.nd.ones(A.shape))
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), (A >= B).astype(np.float32))


def test_bad_operand_type():
    with pytest.raises(TypeError):
        mx.sym.maximum("a", mx.sym.var("b"))
