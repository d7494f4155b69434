"""lgamma and digamma on plain arrays (mxref/ops/special.py), against math.lgamma and known values."""
import math

import numpy as np

from mxref.ops.special import digamma, lgamma

X = np.array([1e-6, 0.1, 0.5, 0.7, 1.0, 1.5, 2.0, 2.5, 3.3, 7.5, 20.0, 150.0, 1e5, -0.5, -1.5, -2.3])


def test_lgamma_matches_math_lgamma():
    want = np.array([math.lgamma(v) for v in X])
    np.testing.assert_allclose(lgamma(X), want, rtol=1e-13, atol=1e-14)
    assert np.isinf(lgamma(np.array([0.0, -1.0, -2.0]))).all()
    assert lgamma(np.float32(3.0)).dtype == np.float64


def test_digamma_known_values_and_derivative_of_lgamma():
    euler = 0.5772156649015329
    harmonic6 = sum(1 / n for n in range(1, 7))
    np.testing.assert_allclose(digamma(np.array([1.0, 0.5, 7.0])),
                               [-euler, -euler - 2 * math.log(2), -euler + harmonic6], rtol=1e-14)
    np.testing.assert_allclose(digamma(np.array([1e5])), math.log(1e5) - 0.5e-5 - 1 / 12e10, rtol=1e-15)
    x = X[(X > 0.05) & (X < 1000)]       # lgamma's differences lose digits for large x
    h = 1e-6
    np.testing.assert_allclose(digamma(x), (lgamma(x + h) - lgamma(x - h)) / (2 * h), rtol=1e-6, atol=1e-6)
    # the recurrence psi(x+1) = psi(x) + 1/x holds below zero too (reflection)
    neg = np.array([-0.5, -1.5, -2.3])
    np.testing.assert_allclose(digamma(neg + 1), digamma(neg) + 1 / neg, rtol=1e-12)
    assert np.isnan(digamma(np.array([0.0, -1.0, -3.0]))).all()
