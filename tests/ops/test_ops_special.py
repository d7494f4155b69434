"""erf / erfinv / gamma / gammaln against Python's math module, the parametrised elementwise ops
(hard_sigmoid, smooth_l1, quadratic, div_sqrt_dim), softmin and moments: values, dtypes, gradients."""
import math

import numpy as np
import pytest
from ops_check import check_numeric_grad, run_op

import mxref as mx
from mxref.base import MXNetError
from mxref.ops import special

GRID = np.linspace(-7, 7, 2001)


def test_erf_matches_math_erf():
    """Absolute error about 1e-15 over [-7, 7]; NaN and infinities pass through."""
    want = np.array([math.erf(v) for v in GRID])
    np.testing.assert_allclose(run_op("erf", GRID)[0], want, rtol=0, atol=3e-15)
    np.testing.assert_array_equal(run_op("erf", np.array([np.inf, -np.inf, 0.0]))[0], [1, -1, 0])
    assert np.isnan(run_op("erf", np.array([np.nan]))[0][0])


def test_erfinv_inverts_erf_in_the_tails_too():
    """erf(erfinv(y)) = y, relatively so for 1 - y near 0; +-1 -> +-inf; |y| > 1 -> NaN."""
    y = np.concatenate([np.linspace(-0.999, 0.999, 999), [1 - 2 ** -50, 1e-300]])
    x = run_op("erfinv", y)[0]
    np.testing.assert_allclose([math.erf(v) for v in x], y, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(math.erfc(x[-2]), 2 ** -50, rtol=1e-12)
    out = run_op("erfinv", np.array([-1, -0.5, 0, 0.5, 0.999, 1, 1.5], np.float32))[0]
    np.testing.assert_allclose(out[1:5], [-0.4769362807, 0, 0.4769362807, 2.326756238], rtol=1e-6)
    assert out[0] == -np.inf and out[5] == np.inf and np.isnan(out[6])


def test_gamma_and_gammaln_match_math_and_mxnet_poles():
    """Lanczos values within 1e-13 relative; poles as C's tgamma/lgamma (and MXNet 1.9.1)."""
    x = np.concatenate([np.linspace(-20.5, 170.5, 3000), [0.5, 1, 2, 3, 10, 1e-8]])
    x = x[x != np.floor(x)]
    np.testing.assert_allclose(run_op("gamma", x)[0], [math.gamma(v) for v in x], rtol=2e-13)
    np.testing.assert_allclose(run_op("gammaln", x)[0], [math.lgamma(v) for v in x], rtol=1e-13, atol=1e-14)
    g = run_op("gamma", np.array([-2, -1, 0, -0.0, 4, 172], np.float32))[0]
    assert np.isnan(g[0]) and np.isnan(g[1]) and g[2] == np.inf and g[3] == -np.inf
    assert g[4] == 6 and g[5] == np.inf
    np.testing.assert_array_equal(run_op("gammaln", np.array([-2.0, 0.0]))[0], [np.inf, np.inf])
    np.testing.assert_array_equal(run_op("gamma", np.array([3, 4], np.int32))[0], [2, 6])
    n = np.arange(1, 21)
    np.testing.assert_array_equal(run_op("gamma", n.astype(np.int64))[0],
                                  [math.factorial(k - 1) for k in n])      # exact, not 0.999.. -> 0
    np.testing.assert_array_equal(run_op("gammaln", np.array([1.0, 2.0]))[0], [0, 0])


def test_digamma_is_the_derivative_of_gammaln():
    """psi (gamma's and gammaln's gradient) against differences of math.lgamma, also below 0."""
    x = np.array([-3.7, -0.2, 0.3, 1.0, 2.5, 7.0, 40.0])
    h = 1e-6
    num = [(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x]
    np.testing.assert_allclose(special._digamma64(x), num, rtol=1e-7)


@pytest.mark.parametrize("name,lo,hi", [("erf", -2, 2), ("erfinv", -0.9, 0.9), ("gamma", 0.3, 4),
                                        ("gammaln", 0.3, 4)])
def test_special_gradients(name, lo, hi):
    """The backward ops agree with central differences."""
    check_numeric_grad(name, np.linspace(lo, hi, 7).reshape(7, 1) + 0.01, rtol=1e-6)


def test_hard_sigmoid_and_smooth_l1_match_mxnet():
    """Values MXNet 1.9.1 printed for x = [-2, -1.5, -1, 0, 0.5, 1, 2.5, 4]."""
    x = np.array([-2, -1.5, -1, 0, 0.5, 1, 2.5, 4], np.float32)
    np.testing.assert_allclose(run_op("hard_sigmoid", x)[0], [0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 1, 1], rtol=1e-6)
    np.testing.assert_allclose(run_op("smooth_l1", x)[0], [1.5, 1, 0.5, 0, 0.125, 0.5, 2, 3.5])
    np.testing.assert_allclose(run_op("smooth_l1", x, scalar=2)[0],
                               [1.875, 1.375, 0.875, 0, 0.375, 0.875, 2.375, 3.875])
    assert run_op("smooth_l1", x)[0].dtype == np.float32
    xs = np.array([-2.1, -0.7, 0.2, 0.33, 1.3, 3.1])
    check_numeric_grad("hard_sigmoid", xs, alpha=0.3, beta=0.4)
    check_numeric_grad("smooth_l1", xs, scalar=1.5)


def test_quadratic_and_div_sqrt_dim():
    """a x^2 + b x + c and x / sqrt(last dim) (integers truncate), with gradients."""
    m = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.testing.assert_array_equal(run_op("_contrib_quadratic", m, a=1, b=2, c=3)[0],
                                  [[6, 11, 18], [27, 38, 51]])
    np.testing.assert_allclose(run_op("_contrib_div_sqrt_dim", m)[0], m / np.sqrt(3))
    np.testing.assert_array_equal(run_op("_contrib_div_sqrt_dim", m.astype(np.int32))[0], m)
    check_numeric_grad("_contrib_quadratic", m.astype(np.float64), a=0.5, b=-2, c=1)
    check_numeric_grad("_contrib_div_sqrt_dim", m.astype(np.float64))
    np.testing.assert_allclose(mx.nd.contrib.quadratic(mx.nd.array(m), a=1).asnumpy(), m * m)


def test_softmin_is_softmax_of_minus_x():
    """softmin(x) = softmax(-x), with temperature and dtype; MXNet 1.9.1's numbers."""
    m = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.testing.assert_allclose(run_op("softmin", m, axis=0)[0], [[0.95257413] * 3, [0.04742587] * 3],
                               rtol=1e-6)
    np.testing.assert_allclose(run_op("softmin", m, temperature=2.0)[0][0],
                               [0.5064804, 0.3071959, 0.18632373],
                               rtol=1e-6)
    assert run_op("softmin", m, dtype="float64")[0].dtype == np.float64
    check_numeric_grad("softmin", m.astype(np.float64), axis=1, temperature=1.5)


def test_moments_values_shapes_and_gradient():
    """Mean and (population) variance over axes, keepdims, int dtype, the empty-axes error."""
    m = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    mean, var = run_op("moments", m, axes=(0,))
    np.testing.assert_allclose(mean, [2.5, 3.5, 4.5])
    np.testing.assert_allclose(var, [2.25, 2.25, 2.25])
    mean, var = run_op("moments", m, axes=(1,), keepdims=True)
    assert mean.shape == (2, 1)
    np.testing.assert_allclose(var, [[2 / 3], [2 / 3]], rtol=1e-6)
    mean, var = run_op("moments", m.astype(np.int32), axes=(1,))
    assert mean.dtype == np.int32 and list(var) == [0, 0]
    with pytest.raises(MXNetError, match="moments: empty axes"):
        run_op("moments", m)
    check_numeric_grad("moments", np.random.default_rng(0).standard_normal((3, 4)), axes=(0, 1))
    check_numeric_grad("moments", np.random.default_rng(1).standard_normal((2, 3, 4)), axes=(1,),
                       keepdims=True)
