"""LayerNorm: per-sample normalisation along axis, mean/std outputs, gradients, vs MXNet 1.9.1."""
import numpy as np
import pytest
from nn_check import check_fixture, check_gradient, fixture_cases, forward

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
