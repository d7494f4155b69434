"""The one-call pool hit and pooled free (``storage_core.lend``/``take_back`` and their Python twins
``PooledStorageManager._lend_hit``/``_take_back``): the same blocks, counters and errors as
``alloc``/``free``, and ``storage.alloc``/``free`` taking them only while nobody profiles."""
import random

import pytest

from mxref import profiler, storage
from mxref.base import MXNetError
from mxref.context import cpu
from mxref.storage.device import CPUDevice
from mxref.storage.handle import FREED
from mxref.storage.pool import PooledStorageManager
from mxref.storage.strategy import NaiveStrategy, RoundStrategy, UnpooledStrategy

STRATEGIES = [NaiveStrategy(), RoundStrategy(), UnpooledStrategy()]


def run_trace(pool, seed, fast, steps=400):
    """A seeded alloc/free sequence; ``fast`` asks the one-call paths first, as ``storage`` does.
    Returns which block (by order of first appearance) each request got, and the counters."""
    rng = random.Random(seed)
    sizes = [rng.choice([0, 1, 40, 4096, 4097, rng.randrange(1, 100000)]) for _ in range(6)]
    live, names, trace, keep = [], {}, [], []     # keep: so no block's id is reused
    for _ in range(steps):
        if rng.random() < 0.55 or not live:
            n = rng.choice(sizes)
            h = pool._lend(pool, n) if fast else None
            if h is None:
                h = pool.alloc(n)
            assert h.size == n and h.buffer.nbytes == n and h._pool is pool
            trace.append(names.setdefault(id(h._block), len(names)))
            keep.append(h._block)
            live.append(h)
        else:
            h = live.pop(rng.randrange(len(live)))
            if not (fast and pool._give_back(pool, h)):
                pool.free(h)
            assert h._pool is FREED and h.buffer is None
    return trace, pool.stats()


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.kind)
@pytest.mark.parametrize("seed", range(3))
def test_fast_paths_match_alloc_and_free_on_both_cores(core_cls, strategy, seed):
    got = run_trace(PooledStorageManager(cpu(), CPUDevice(), strategy, 0, core_cls), seed, True)
    want = run_trace(PooledStorageManager(cpu(), CPUDevice(), strategy, 0, core_cls), seed, False)
    assert got == want


def test_the_compiled_pair_serves_the_cython_core_and_the_python_pair_the_python_one(core_cls):
    pool = PooledStorageManager(cpu(), CPUDevice(), NaiveStrategy(), 0, core_cls)
    compiled = pool.core_kind == "cython"
    assert (pool._lend is PooledStorageManager._lend_hit) is not compiled
    assert (pool._give_back is PooledStorageManager._take_back) is not compiled


def test_a_miss_a_foreign_and_a_freed_handle_go_the_ordinary_way(core_cls):
    pool = PooledStorageManager(cpu(), CPUDevice(), NaiveStrategy(), 0, core_cls)
    other = PooledStorageManager(cpu(), CPUDevice(), NaiveStrategy(), 0, core_cls)
    assert pool._lend(pool, 100) is None                # nothing pooled yet: a miss
    h = pool.alloc(100)
    assert other._give_back(other, h) is False and h._pool is pool
    assert pool._give_back(pool, h) is True
    assert pool._give_back(pool, h) is False           # twice: free() raises the double free
    with pytest.raises(MXNetError, match="double free"):
        pool.free(h)
    assert pool._lend(pool, -1) is None and pool._lend(pool, 1 << 61) is None


def test_storage_alloc_and_free_use_them_and_profiling_takes_the_recording_path(fresh_storage, tmp_path):
    ctx = cpu()
    h = storage.alloc(40, ctx)
    storage.free(h)
    before = storage.stats(ctx)
    h = storage.alloc(40, ctx)                          # a hit, through the one-call path
    storage.free(h)
    after = storage.stats(ctx)
    assert after["num_pool_hits"] == before["num_pool_hits"] + 1
    assert after["num_free"] == before["num_free"] + 1 and after["bytes_in_use"] == 0
    profiler.set_config(profile_memory=True, filename=str(tmp_path / "p.json"))
    profiler.set_state("run")
    try:
        n_events = len(profiler._state.events)
        storage.free(storage.alloc(40, ctx))
        assert len(profiler._state.events) >= n_events + 2   # both recorded the bytes in use
    finally:
        profiler.set_state("stop")
        profiler._state.events.clear()
