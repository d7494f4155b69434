"""_random_pdf_*: densities against closed forms, is_log, shapes, and gradients by central differences."""
import math

import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

import mxref as mx

R = np.random.default_rng(7)
MU, SIGMA = np.array([[0.0, 2.5], [-9.75, -7.0]]), np.array([[1.0, 3.7], [4.2, 1.5]])
SHAPE = (2, 2, 5)
COUNTS = R.integers(0, 8, size=SHAPE).astype(np.float64)


def _lg(a):
    return np.vectorize(math.lgamma)(a)


def _each(p):          # parameters broadcast against the 5 samples below each of them
    return p[..., None]


# dist -> (sample, params, log density written with math.lgamma, continuous in the sample)
CASES = {
    "uniform": (R.uniform(0.1, 0.9, SHAPE), [MU - 1, MU + 3],
                lambda x, lo, hi: np.broadcast_to(-np.log(_each(hi - lo)), x.shape), False),
    "normal": (R.normal(size=SHAPE), [MU, SIGMA],
               lambda x, mu, s: -(x - _each(mu)) ** 2 / (2 * _each(s) ** 2)
               - np.log(math.sqrt(2 * math.pi) * _each(s)), True),
    "gamma": (R.uniform(0.2, 4.0, SHAPE), [SIGMA + 0.5, SIGMA / 2],
              lambda x, a, b: (_each(a) * np.log(_each(b)) + (_each(a) - 1) * np.log(x)
                               - _each(b) * x - _lg(_each(a))), True),
    "exponential": (R.uniform(0.1, 3.0, SHAPE), [SIGMA],
                    lambda x, lam: np.log(_each(lam)) - _each(lam) * x, True),
    "poisson": (COUNTS, [SIGMA * 2],
                lambda x, lam: x * np.log(_each(lam)) - _lg(x + 1) - _each(lam), False),
    "negative_binomial": (COUNTS, [SIGMA + 1, np.array([[0.4, 0.77], [0.5, 0.84]])],
                          lambda x, k, p: (_lg(x + _each(k)) - _lg(x + 1) - _lg(_each(k))
                                           + _each(k) * np.log(_each(p)) + x * np.log(1 - _each(p))),
                          False),
    "generalized_negative_binomial": (
        COUNTS, [SIGMA, np.array([[1.0, 0.1], [0.2, 0.5]])],
        lambda x, mu, a: (_lg(x + 1 / _each(a)) - _lg(x + 1) - _lg(1 / _each(a))
                          - np.log(_each(mu) * _each(a) + 1) / _each(a)
                          + x * np.log(_each(mu) * _each(a) / (_each(mu) * _each(a) + 1))), False),
}


@pytest.mark.parametrize("dist", sorted(CASES))
@pytest.mark.parametrize("is_log", [False, True])
def test_density_matches_the_closed_form(dist, is_log):
    x, params, logpdf, _ = CASES[dist]
    (y,) = run_op(f"_random_pdf_{dist}", x, *params, is_log=is_log)
    want = logpdf(x, *params)
    np.testing.assert_allclose(y, want if is_log else np.exp(want), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dist", sorted(CASES))
@pytest.mark.parametrize("is_log", [False, True])
def test_gradient_matches_central_differences(dist, is_log):
    """The parameters' gradients (summed over their samples), and the sample's for continuous
    densities; discrete samples and the uniform's get zero, as in MXNet."""
    x, params, _, continuous = CASES[dist]
    wrt = range(1 + len(params)) if continuous else range(1, 1 + len(params))
    check_numeric_grad(f"_random_pdf_{dist}", x, *params, wrt=list(wrt), is_log=is_log,
                       rtol=1e-5, atol=1e-8, eps=1e-6)
    if not continuous:
        np.testing.assert_array_equal(grad_op(f"_random_pdf_{dist}", x, *params, is_log=is_log)[0], 0)


def _dirichlet_case():
    alpha = R.uniform(0.5, 2.0, size=(2, 3))
    sample = R.dirichlet(alpha[0], size=(2, 4)).copy()
    sample[1] = R.dirichlet(alpha[1], size=4)
    return sample, alpha


def test_dirichlet_density_shapes_and_gradient():
    """Samples (2, 4, 3) under alpha (2, 3): four 3-vectors per distribution, output (2, 4)."""
    x, alpha = _dirichlet_case()
    (y,) = run_op("_random_pdf_dirichlet", x, alpha, is_log=True)
    want = ((alpha[:, None, :] - 1) * np.log(x)).sum(-1) + _lg(alpha.sum(-1))[:, None] \
        - _lg(alpha).sum(-1)[:, None]
    np.testing.assert_allclose(y, want, rtol=1e-10)
    for is_log in (False, True):
        check_numeric_grad("_random_pdf_dirichlet", x, alpha, is_log=is_log, rtol=1e-5, atol=1e-8)
    (one,) = run_op("_random_pdf_dirichlet", np.array([0.3, 0.7]), np.array([1.0, 2.0]))
    np.testing.assert_allclose(one, [1.4])       # Γ(3)/(Γ(1)Γ(2)) * 0.7 = 1.4, shape (1,)


def test_nd_and_sym_forms_and_dtypes():
    """mx.nd.random_pdf_normal / mx.sym.random_pdf_normal: the parameters' shape is a leading part
    of the sample's; all inputs share one dtype, which the output keeps."""
    x = mx.nd.array(CASES["normal"][0], dtype="float32")
    y = mx.nd.random_pdf_normal(x, mx.nd.array(MU), mx.nd.array(SIGMA), is_log=True)
    assert y.shape == SHAPE and y.dtype == np.float32
    np.testing.assert_allclose(y.asnumpy(), CASES["normal"][2](x.asnumpy(), MU, SIGMA), rtol=1e-5)
    s = mx.sym.random_pdf_gamma(mx.sym.var("s"), mx.sym.var("a"), mx.sym.var("b"))
    assert s.list_arguments() == ["s", "a", "b"]
    assert s.infer_shape(s=(2, 3, 4), a=(2, 3)) == ([(2, 3, 4), (2, 3), (2, 3)], [(2, 3, 4)], [])
    assert s.infer_type(s="float64")[1] == [np.float64]
    d = mx.sym.random_pdf_dirichlet(mx.sym.var("s"), mx.sym.var("a"))
    assert d.infer_shape(s=(2, 5, 3), a=(2, 3))[1] == [(2, 5)]
    ex = s.bind(mx.cpu(), {"s": mx.nd.ones((2, 1)), "a": mx.nd.array([1.0, 2.0]),
                           "b": mx.nd.array([1.0, 1.0])})
    np.testing.assert_allclose(ex.forward()[0].asnumpy().ravel(), [math.exp(-1), math.exp(-1)], rtol=1e-6)


def test_shape_errors_name_the_operator():
    with pytest.raises(mx.MXNetError, match="_random_pdf_normal: the parameters' shape \\(3,\\)"):
        mx.nd.random_pdf_normal(mx.nd.ones((2, 5)), mx.nd.ones((3,)), mx.nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match="_random_pdf_uniform: the parameter arrays must have one shape"):
        mx.nd.random_pdf_uniform(mx.nd.ones((2, 5)), mx.nd.ones((2,)), mx.nd.ones((2, 5)))
    with pytest.raises(mx.MXNetError, match="same last axis"):
        mx.nd.random_pdf_dirichlet(mx.nd.ones((2, 5, 3)), mx.nd.ones((2, 4)))
