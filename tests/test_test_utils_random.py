"""The generator checks of mxref.test_utils: chi-square p values without scipy, buckets from a
quantile function, mean/variance checks, and verify_generator on right and wrong generators."""
import math

import numpy as np
import pytest

import mxref as mx
from mxref.test_utils import (
    chi_square_check,
    chi_square_p_value,
    gen_buckets_probs_with_ppf,
    mean_check,
    var_check,
    verify_generator,
)


def test_chi_square_tail_matches_closed_forms():
    """dof 2: exp(-x/2); dof 1: erfc(sqrt(x/2)); dof 4: exp(-x/2)(1 + x/2); both branches of Q."""
    for x in [0.1, 1.0, 3.0, 7.5, 30.0]:
        assert chi_square_p_value(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-12)
        assert chi_square_p_value(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-10)
        assert chi_square_p_value(x, 4) == pytest.approx(math.exp(-x / 2) * (1 + x / 2), rel=1e-12)
    assert chi_square_p_value(0.0, 5) == 1.0
    assert chi_square_p_value(11.0705, 5) == pytest.approx(0.05, abs=1e-5)   # the 95% point, dof 5


def test_buckets_from_a_quantile_function():
    buckets, probs = gen_buckets_probs_with_ppf(lambda q: 2 * q - 1, 4)
    assert buckets == [(-1.0, -0.5), (-0.5, 0.0), (0.0, 0.5), (0.5, 1.0)] and probs == [0.25] * 4


def test_chi_square_check_on_continuous_and_discrete_generators():
    rng = np.random.default_rng(0)
    buckets, probs = gen_buckets_probs_with_ppf(lambda q: q, 5)
    p, obs, exp = chi_square_check(lambda n: rng.uniform(size=n), buckets, probs, nsamples=50000)
    assert p > 0.01 and obs.sum() == 50000 and (exp == 10000).all()
    p, _, _ = chi_square_check(lambda n: rng.uniform(size=n) ** 2, buckets, probs, nsamples=50000)
    assert p < 1e-10
    p, obs, _ = chi_square_check(lambda n: rng.integers(0, 3, size=n), [0, 1, 2], [1 / 3] * 3, 30000)
    assert p > 0.01 and obs.sum() == 30000


def test_verify_generator_passes_mxnet_samplers_and_fails_a_wrong_one():
    mx.random.seed(1)
    buckets, probs = gen_buckets_probs_with_ppf(lambda q: -math.log(1 - q) if q < 1 else np.inf, 5)
    ps = verify_generator(lambda n: mx.nd.random.exponential(1.0, shape=n).asnumpy(), buckets, probs,
                          nsamples=20000, nrepeat=3)
    assert len(ps) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        verify_generator(lambda n: mx.nd.random.exponential(1.3, shape=n).asnumpy(), buckets, probs,
                         nsamples=20000, nrepeat=3)


def test_mean_and_variance_checks():
    rng = np.random.default_rng(3)
    assert mean_check(lambda n: rng.normal(2.0, 1.0, size=n), 2.0, 1.0, nsamples=100000)
    assert not mean_check(lambda n: rng.normal(2.1, 1.0, size=n), 2.0, 1.0, nsamples=100000)
    assert var_check(lambda n: rng.normal(0.0, 2.0, size=n), 2.0, nsamples=100000)
    assert not var_check(lambda n: rng.normal(0.0, 2.2, size=n), 2.0, nsamples=100000)


@pytest.mark.parametrize("kind", ["int32", "float32", "int64_large"])
def test_chi_square_bucket_counts_match_the_searchsorted_rule(kind):
    """The per-edge counting gives the counts of ``searchsorted(edges, x, 'right') // 2``: gaps
    between buckets belong to the next bucket, values past the last edge and NaNs to none."""
    from mxref.test_utils import _bucket_counts
    rng = np.random.RandomState(0)
    if kind == "int32":
        x = rng.randint(-500, 199, size=20000).astype(np.int32)
        edges = np.array([-500, -360, -360, -220, -200, -80, -80, 60, 60, 150], np.float32)
    elif kind == "float32":
        x = np.r_[rng.normal(size=20000), np.nan, 5.0, -5.0].astype(np.float32)
        edges = np.array([-1, -0.5, -0.5, 0, 0.1, 0.5, 0.5, 1], np.float32)
    else:
        x = rng.randint(50000000, 50001000, size=5000).astype(np.int64)
        edges = np.array([50000000, 50000200, 50000200, 50000400], np.float32)
    ids = np.searchsorted(edges, x, side="right") // 2
    want = [int((ids == i).sum()) for i in range(edges.size // 2)]
    assert _bucket_counts(x, edges).tolist() == want
