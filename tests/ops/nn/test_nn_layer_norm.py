"""LayerNorm: per-sample normalisation along axis, mean/std outputs, gradients, vs MXNet 1.9.1."""
import numpy as np
import pytest
from nn_check import check_fixture, check_gradient, fixture_cases, forward, grads

CASES = fixture_cases("LayerNorm")


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    """Outputs (with mean and std) and gradients equal MXNet's."""
    check_fixture("LayerNorm", CASES[name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward(rng, dtype):
    """Each row is normalised along the last axis, then scaled and shifted."""
    x = rng.standard_normal((3, 6)).astype(dtype)
    g, b = np.full(6, 2.0, dtype), np.full(6, 0.5, dtype)
    out, mean, std = forward("LayerNorm", [x, g, b])
    assert out.dtype == dtype and mean.shape == (3, 1)
    np.testing.assert_allclose((out - 0.5) / 2, (x - x.mean(1, keepdims=True)) /
                               np.sqrt(x.var(1, keepdims=True) + 1e-5), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_gradient(rng, axis):
    """Gradients of data, gamma and beta agree with central differences."""
    x = rng.standard_normal((3, 4, 2))
    c = x.shape[axis]
    check_gradient("LayerNorm", [x, rng.standard_normal(c), rng.standard_normal(c)], axis=axis)


def test_float32_parameter_gradients_over_many_rows_are_accurate():
    """gamma/beta gradients sum over every row: over 4096 float32 rows they stay within a float32
    rounding of the float64 sum (a row-by-row float32 sum drifts ~1e-4)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4096, 64)).astype(np.float32)
    gamma, beta = np.ones(64, np.float32), np.zeros(64, np.float32)
    og = rng.standard_normal((4096, 64)).astype(np.float32)
    _, dgamma, dbeta = grads("LayerNorm", [x, gamma, beta], [og], axis=-1)
    assert dbeta.dtype == np.float32
    np.testing.assert_allclose(dbeta, og.astype(np.float64).sum(axis=0), rtol=1e-6, atol=1e-5)
    xd = x.astype(np.float64)
    xhat = (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(dgamma, (og * xhat).sum(axis=0), rtol=1e-5, atol=1e-4)
