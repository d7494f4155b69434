"""PoolCore bookkeeping: free lists and counters, and the Cython twin matching the pure one step by step."""
import random

import pytest
from storage_helpers import cython_core_cls

from mxref.storage.bookkeeping import STAT_KEYS, PoolCore
from mxref.storage.strategy import NaiveStrategy, RoundStrategy, UnpooledStrategy

STRATEGIES = [NaiveStrategy(), RoundStrategy(), RoundStrategy(page_size=1000, cutoff=20),
              NaiveStrategy(page_size=64, large_alloc_round_size=1 << 16), UnpooledStrategy()]
EDGE_SIZES = [0, 1, 63, 64, 65, 999, 1000, 1001, 4095, 4096, 4097, (1 << 16) - 1, 1 << 16,
              (1 << 16) + 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, (1 << 24) - 1, 1 << 24,
              (1 << 24) + 1, 3 << 24, 1 << 40, (1 << 50) + 7]


def run_trace(core_cls, strategy, seed, steps=600):
    """Drive a core with a seeded random alloc/free/direct_free/release_all sequence.

    Blocks are serial numbers, so the trace records exactly which block each request got.
    """
    rng = random.Random(seed)
    core = core_cls(strategy)
    sizes = [rng.choice([rng.randrange(0, 20000), rng.randrange(0, 1 << 26)]) for _ in range(12)]
    live, serial, trace = [], 0, []
    for _ in range(steps):
        r = rng.random()
        if r < 0.5 or not live:
            key = core.bucket(rng.choice(sizes))
            block = core.take(key)
            if block is None:
                serial += 1
                block = serial
                core.track_new(key)
                trace.append(("new", key, block))
            else:
                trace.append(("hit", key, block))
            live.append((key, block))
        elif r < 0.9:
            key, block = live.pop(rng.randrange(len(live)))
            trace.append(("give", key, block, core.give(key, block)))
        elif r < 0.97:
            key, block = live.pop(rng.randrange(len(live)))
            core.forget(key)
            trace.append(("forget", key, block))
        else:
            trace.append(("drain", sorted(core.drain())))
        trace.append(core.stats())
    return trace, core.free_counts()


@pytest.mark.parametrize("strategy", STRATEGIES, ids=repr)
def test_cython_twin_buckets_match(strategy):
    """Same key and block size for every edge size and a sweep of random sizes."""
    fast, pure = cython_core_cls()(strategy), PoolCore(strategy)
    rng = random.Random(7)
    for n in EDGE_SIZES + [rng.randrange(0, 1 << 34) for _ in range(2000)]:
        assert fast.bucket(n) == pure.bucket(n), n
        assert fast.block_size(fast.bucket(n)) == pure.block_size(pure.bucket(n)), n


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("strategy", STRATEGIES, ids=repr)
def test_cython_twin_matches_on_random_sequences(strategy, seed):
    """Same hit/miss pattern, same blocks reused in the same order, same counters after each step."""
    assert run_trace(cython_core_cls(), strategy, seed) == run_trace(PoolCore, strategy, seed)


def test_lifo_reuse_and_counters(core_cls):
    """The block freed last is reused first; hits move bytes from pooled to in-use."""
    core = core_cls(NaiveStrategy())
    key = core.bucket(100)
    assert core.take(key) is None
    core.track_new(key)
    core.track_new(key)
    assert core.give(key, "a") and core.give(key, "b")
    assert core.stats() == dict(bytes_in_use=0, bytes_pooled=8192, peak_bytes_in_use=8192, num_alloc=2,
                                num_free=2, num_pool_hits=0, num_release_all=0)
    assert core.take(key) == "b"
    assert core.stats()["bytes_in_use"] == 4096 and core.stats()["num_pool_hits"] == 1
    assert core.free_counts() == {4096: 1}
    assert core.drain() == [(4096, "a")]
    assert core.stats()["bytes_pooled"] == 0 and core.stats()["num_release_all"] == 1
    assert core.free_counts() == {}


def test_unpooled_give_returns_false(core_cls):
    """With Unpooled, give() keeps nothing and tells the caller to free the block itself."""
    core = core_cls(UnpooledStrategy())
    key = core.bucket(10)
    core.track_new(key)
    assert core.give(key, "x") is False
    assert core.take(key) is None
    assert core.stats()["bytes_pooled"] == 0 and core.stats()["num_free"] == 1


def test_stat_keys(core_cls):
    """Both twins report exactly the documented counters."""
    assert tuple(core_cls(RoundStrategy()).stats()) == STAT_KEYS
