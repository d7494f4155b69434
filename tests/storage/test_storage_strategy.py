"""Bucketing strategies: MXNet's Naive page/large rounding, Round power-of-two/linear buckets, Unpooled."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mxref.base import MXNetError
from mxref.storage.strategy import (
    NaiveStrategy,
    RoundStrategy,
    UnpooledStrategy,
    make_strategy,
    strategy_from_env,
)

MiB = 1 << 20


@pytest.mark.parametrize("nbytes, expected", [
    (0, 4096), (1, 4096), (4096, 4096), (4097, 8192),
    (2 * MiB, 2 * MiB),                 # exactly the large-round size: stays page-rounded
    (2 * MiB + 1, 4 * MiB),             # above it: whole 2 MiB slabs
    (5 * MiB + 123, 6 * MiB),
])
def test_naive_rounds_to_pages_then_to_large_slabs(nbytes, expected):
    """Naive: page multiple, then multiples of MXNET_*_MEM_LARGE_ALLOC_ROUND_SIZE above it."""
    s = NaiveStrategy()
    assert s.bucket(nbytes) == expected
    assert s.block_size(s.bucket(nbytes)) == expected


@pytest.mark.parametrize("nbytes, bucket, size", [
    (0, 12, 4096), (1, 12, 4096), (4096, 12, 4096),   # never below one page
    (4097, 13, 8192), (5000, 13, 8192),
    (1 << 24, 24, 1 << 24),                          # 2^cutoff is still a power-of-two bucket
    ((1 << 24) + 1, 25, 2 << 24),                    # above: linear multiples of 2^cutoff
    (3 << 24, 26, 3 << 24), ((3 << 24) + 1, 27, 4 << 24),
])
def test_round_buckets(nbytes, bucket, size):
    """Round: bucket max(ceil(log2 n), log2 page) up to the cutoff, then ceil(n/2^c) - 1 + c."""
    s = RoundStrategy()
    assert s.bucket(nbytes) == bucket
    assert s.block_size(bucket) == size


def test_round_cutoff_is_configurable():
    """A cutoff of 20 (1 MiB) makes 1.5 MiB land in a 2 MiB linear bucket, not a power of two."""
    s = RoundStrategy(cutoff=20)
    assert s.block_size(s.bucket(3 * MiB // 2)) == 2 * MiB
    assert s.block_size(s.bucket(5 * MiB // 2)) == 3 * MiB


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=1 << 40))
def test_every_block_fits_its_request(nbytes):
    """For every strategy the block holds the request, and Naive blocks are whole pages."""
    for s in (NaiveStrategy(), RoundStrategy(), UnpooledStrategy()):
        assert s.block_size(s.bucket(nbytes)) >= nbytes
    assert NaiveStrategy().bucket(nbytes) % 4096 == 0
    r = RoundStrategy()
    size = r.block_size(r.bucket(nbytes))
    if 4096 < nbytes <= 1 << 24:
        assert size & (size - 1) == 0 and size < 2 * nbytes


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=1 << 36), st.integers(min_value=0, max_value=1 << 36))
def test_buckets_are_monotonic(a, b):
    """A larger request never gets a smaller block."""
    lo, hi = min(a, b), max(a, b)
    for s in (NaiveStrategy(), RoundStrategy()):
        assert s.block_size(s.bucket(lo)) <= s.block_size(s.bucket(hi))


def test_unpooled_keeps_exact_sizes():
    """Unpooled asks the device for exactly the request (at least one byte) and pools nothing."""
    s = UnpooledStrategy()
    assert (s.bucket(0), s.bucket(12345), s.pooled) == (1, 12345, False)


def test_bad_parameters_raise():
    """Unknown pool types and out-of-range parameters are MXNetError naming the problem."""
    with pytest.raises(MXNetError, match="unknown memory pool type 'Exact'"):
        make_strategy("Exact")
    with pytest.raises(MXNetError, match="cutoff must be in"):
        RoundStrategy(cutoff=40)
    with pytest.raises(MXNetError, match="page size"):
        NaiveStrategy(page_size=0)


def test_strategy_from_env(monkeypatch):
    """MXNET_<DEV>_MEM_POOL_* pick the type and its parameters."""
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_TYPE", "Round")
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_PAGE_SIZE", "256")
    monkeypatch.setenv("MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF", "22")
    s = strategy_from_env("GPU", "Naive")
    assert (s.kind, s.page_size, s.cutoff, s.bucket(1)) == ("Round", 256, 22, 8)
    monkeypatch.setenv("MXNET_CPU_MEM_LARGE_ALLOC_ROUND_SIZE", "65536")
    c = strategy_from_env("CPU", "Naive")
    assert (c.kind, c.bucket(65537)) == ("Naive", 131072)
    monkeypatch.setenv("MXNET_CPU_MEM_POOL_PAGE_SIZE", "many")
    with pytest.raises(MXNetError, match="MXNET_CPU_MEM_POOL_PAGE_SIZE"):
        strategy_from_env("CPU", "Naive")
