"""Array-with-scalar operators: integer scalar handling, gradients, aliases."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

from mxref.ops import registry

X = np.random.default_rng(1).uniform(0.3, 2.0, (2, 3))


@pytest.mark.parametrize("name,scalar", [
    ("_plus_scalar", 1.5), ("_minus_scalar", 1.5), ("_rminus_scalar", 1.5), ("_mul_scalar", -2.0),
    ("_div_scalar", 4.0), ("_rdiv_scalar", 3.0), ("_power_scalar", 2.5), ("_rpower_scalar", 1.7),
    ("_maximum_scalar", 1.0), ("_minimum_scalar", 1.0), ("_mod_scalar", 0.7), ("_rmod_scalar", 5.0),
    ("_hypot_scalar", 2.0)])
def test_scalar_gradient_matches_central_differences(name, scalar):
    """Every differentiable scalar op's gradient graph matches central differences."""
    check_numeric_grad(name, X, scalar=scalar)


def test_scalar_on_int_array_is_truncated_and_dtype_kept():
    """int32 + 2.7 adds 2 (the scalar is cast to the array dtype); 7 / 2 is 3."""
    a = np.array([1, -7, 7], np.int32)
    (y,) = run_op("_plus_scalar", a, scalar=2.7)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [3, -5, 9])
    np.testing.assert_array_equal(run_op("_div_scalar", a, scalar=2)[0], [0, -3, 3])


def test_scalar_values_float(fdtype):
    """Scalar forms agree with numpy in float32 and float64, with r-forms reversed."""
    x = X.astype(fdtype)
    np.testing.assert_allclose(run_op("_rminus_scalar", x, scalar=3)[0], 3 - x, rtol=1e-6)
    np.testing.assert_allclose(run_op("_rdiv_scalar", x, scalar=3)[0], 3 / x, rtol=1e-6)
    np.testing.assert_allclose(run_op("_rpower_scalar", x, scalar=2)[0], 2 ** x, rtol=1e-6)
    assert run_op("_mul_scalar", x, scalar=2)[0].dtype == fdtype


def test_scalar_comparisons_give_zero_gradient_and_input_dtype():
    """_greater_scalar returns 0/1 in the input dtype and passes back zeros."""
    (y,) = run_op("_greater_scalar", X, scalar=1.0)
    assert y.dtype == X.dtype and set(np.unique(y)) <= {0.0, 1.0}
    (g,) = grad_op("_greater_scalar", X, scalar=1.0)
    assert not g.any()


def test_scalar_aliases_and_params_from_json_strings():
    """MXNet's _PlusScalar etc. resolve, and string attributes ('2.5') parse as numbers."""
    assert registry.get("_PlusScalar") is registry.get("_plus_scalar")
    assert registry.get("_RDivScalar") is registry.get("_rdiv_scalar")
    p = registry.get("_mul_scalar").parse_params({"scalar": "2.5", "is_int": "False"})
    assert p == {"scalar": 2.5, "is_int": False}
