"""Elementwise unary and same-shape binary operators: values, dtypes, req modes, errors, gradients."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

from mxref.base import MXNetError
from mxref.ops import registry

RNG = np.random.default_rng(0)
X = RNG.uniform(0.2, 0.9, (3, 4))        # inside every domain below (log, arcsin, arccosh via 1+x)

DIFFERENTIABLE = {
    "abs": X - 0.5, "square": X, "sqrt": X, "rsqrt": X, "cbrt": X, "rcbrt": X, "reciprocal": X,
    "exp": X, "log": X, "log10": X, "log2": X, "log1p": X, "expm1": X, "sin": X, "cos": X, "tan": X,
    "arcsin": X, "arccos": X, "arctan": X, "degrees": X, "radians": X, "sinh": X, "cosh": X,
    "tanh": X, "arcsinh": X, "arccosh": X + 1, "arctanh": X, "sigmoid": X, "relu": X - 0.5,
    "softsign": X - 0.5, "negative": X,
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_unary_gradient_matches_central_differences(name):
    """d op(x)/dx from the gradient graph equals the numeric derivative."""
    check_numeric_grad(name, DIFFERENTIABLE[name])


@pytest.mark.parametrize("name", ["sign", "round", "rint", "ceil", "floor", "trunc", "fix",
                                  "logical_not"])
def test_flat_unary_ops_have_zero_gradient(name):
    """Rounding, sign and logical_not pass back zeros (MXNet's zero gradient)."""
    (g,) = grad_op(name, X)
    assert g.shape == X.shape and not g.any()


@pytest.mark.parametrize("name,ref", [("exp", np.exp), ("tanh", np.tanh), ("sqrt", np.sqrt),
                                      ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
                                      ("relu", lambda x: np.maximum(x, 0))])
def test_unary_forward_keeps_dtype(name, ref, fdtype):
    """Values match numpy and the output dtype is the input dtype (float32 and float64)."""
    x = (X - 0.3).astype(fdtype)
    if name == "sqrt":
        x = X.astype(fdtype)
    (y,) = run_op(name, x)
    assert y.dtype == fdtype
    np.testing.assert_allclose(y, ref(x), rtol=1e-6)


def test_rint_and_round_follow_mxnet_halfway_rules():
    """round: halves away from zero; rint: floor unless the fraction exceeds .5 (1.5 -> 1)."""
    x = np.array([0.5, 1.5, -0.5, -2.5, 2.5])
    np.testing.assert_array_equal(run_op("round", x)[0], [1, 2, -1, -3, 3])
    np.testing.assert_array_equal(run_op("rint", x)[0], [0, 1, -1, -3, 2])


@pytest.mark.parametrize("name", ["elemwise_mul", "elemwise_div", "_power", "_maximum", "_minimum",
                                  "_mod", "_hypot", "elemwise_add", "elemwise_sub"])
def test_binary_gradient_matches_central_differences(name):
    """Gradients of both inputs of the same-shape binary ops."""
    lhs, rhs = X + 0.5, RNG.uniform(0.3, 1.2, X.shape)
    check_numeric_grad(name, lhs, rhs)


def test_maximum_sends_ties_to_lhs():
    """At lhs == rhs the whole gradient goes to lhs, as MXNet's ge/lt masks."""
    a = np.array([1.0, 2.0, 3.0])
    gl, gr = grad_op("_maximum", a, np.array([1.0, 5.0, 0.0]))
    np.testing.assert_array_equal(gl, [1, 0, 1])
    np.testing.assert_array_equal(gr, [0, 1, 0])


def test_integer_division_truncates_toward_zero():
    """int32 / int32 truncates like C, and keeps int32."""
    (q,) = run_op("elemwise_div", np.array([7, -7, 3], np.int32), np.array([2, 2, -2], np.int32))
    assert q.dtype == np.int32
    np.testing.assert_array_equal(q, [3, -3, -1])


def test_comparison_returns_input_dtype_and_zero_gradient(fdtype):
    """_greater gives 0/1 in the input dtype; its inputs get zero gradient."""
    a, b = np.array([1, 2, 3], fdtype), np.array([2, 2, 2], fdtype)
    (c,) = run_op("_greater", a, b)
    assert c.dtype == fdtype
    np.testing.assert_array_equal(c, [0, 0, 1])
    assert all(not g.any() for g in grad_op("_greater", a, b))


def test_req_add_accumulates_and_inplace_overwrites_input():
    """req='add' adds into the output; an in-place output aliasing the input is computed right."""
    a, b = np.ones(3), np.arange(3.0)
    out = [np.full(3, 10.0)]
    run_op("elemwise_add", a, b, req="add", out=out)
    np.testing.assert_array_equal(out[0], [11, 12, 13])
    x = np.array([0.0, 1.0, -2.0])
    run_op("sigmoid", x, req="inplace", out=[x])
    np.testing.assert_allclose(x, 1 / (1 + np.exp(-np.array([0.0, 1.0, -2.0]))))
    assert registry.get("elemwise_add").inplace == ((0, 0), (1, 0))


def test_shape_inference_fills_unknowns_and_rejects_mismatch():
    """A known input shape fills in the unknown one; inconsistent shapes raise naming both."""
    op = registry.get("elemwise_mul")
    ins, outs = op.infer_shape({}, [None, (2, 3)])
    assert ins == [(2, 3), (2, 3)] and outs == [(2, 3)]
    with pytest.raises(MXNetError, match=r"elemwise_mul: .*\(2, 3\).*\(3, 2\)"):
        op.infer_shape({}, [(2, 3), (3, 2)])
    with pytest.raises(MXNetError, match="elemwise_mul: dtype"):
        op.infer_type({}, [np.dtype(np.float32), np.dtype(np.float64)])


def test_symbol_arithmetic_aliases_are_registered():
    """JSON graphs from MXNet name ops _Plus, _Minus, _Mul, _Div, _Power, _Maximum, _Minimum, _Mod."""
    for alias, name in [("_Plus", "elemwise_add"), ("_plus", "elemwise_add"), ("_Minus", "elemwise_sub"),
                        ("_Mul", "elemwise_mul"), ("_Div", "elemwise_div"), ("_Power", "_power"),
                        ("_Maximum", "_maximum"), ("_Minimum", "_minimum"), ("_Mod", "_mod"),
                        ("_Greater_Equal", "_greater_equal")]:
        assert registry.get(alias) is registry.get(name)


def test_unknown_argument_names_op_and_argument():
    """Passing a parameter an op with parameters does not have is an MXNetError naming both; an op
    without parameters ignores extra keywords, as MXNet's do."""
    with pytest.raises(MXNetError, match="Activation.*'axis'"):
        run_op("Activation", X, act_type="relu", axis=1)
    np.testing.assert_array_equal(run_op("exp", X, axis=1), run_op("exp", X))


def test_float32_exp_is_correctly_rounded():
    """float32 exp goes through float64: exp(1) is 2.7182817 (C's expf), not numpy's SIMD 2.7182820."""
    import mxref as mx
    assert mx.nd.exp(mx.nd.ones((1,))).asnumpy()[0] == np.float32(np.exp(1.0))
    x = np.linspace(-5, 5, 101).astype(np.float32)
    want = np.exp(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(mx.nd.exp(mx.nd.array(x)).asnumpy(), want)


def test_integer_mod_has_zero_gradient():
    """MXNet's mod_grad / mod_rgrad are 0 for integer dtypes (no floor(a / 0) blow-up)."""
    a, b = np.array([7, -3, 5], np.int32), np.array([2, 0, 3], np.int32)
    for op in ("_mod", "broadcast_mod"):
        dl, dr = grad_op(op, a, b)
        assert not dl.any() and not dr.any()
    dl, dr = grad_op("_mod", a.astype(np.float64), np.array([2.0, 4.0, 3.0]))
    np.testing.assert_array_equal(dl, [1, 1, 1])
    np.testing.assert_array_equal(dr, [-3, 1, -1])
