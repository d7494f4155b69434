"""PooledStorageManager: reuse, statistics, reserve rule, release-all-and-retry, bad frees, threads."""
import random
import threading

import numpy as np
import pytest
from storage_helpers import cython_core_cls

from mxref.base import MXNetError
from mxref.context import cpu
from mxref.storage.bookkeeping import PoolCore
from mxref.storage.device import CPUDevice
from mxref.storage.handle import Handle
from mxref.storage.pool import PooledStorageManager
from mxref.storage.strategy import NaiveStrategy, RoundStrategy, UnpooledStrategy

PAGE = 4096


def make_pool(core_cls, strategy=None, limit=None, reserve=0, ctx=None):
    strategy = strategy or NaiveStrategy()
    return PooledStorageManager(ctx or cpu(), CPUDevice(limit), strategy, reserve, core_cls)


def addr(handle):
    return handle.buffer.ctypes.data


def test_handle_buffer_is_aligned_exact_view(core_cls):
    """buffer: 1-D writable uint8, exactly ``size`` bytes, 64-byte aligned; ctx is the pool's."""
    pool = make_pool(core_cls)
    for n in (0, 1, 1000, 4096, 70001):
        h = pool.alloc(n)
        assert (h.buffer.dtype, h.buffer.ndim, h.buffer.nbytes, h.size) == (np.uint8, 1, n, n)
        assert addr(h) % 64 == 0 and h.ctx == cpu()
        h.buffer[:] = 7
        pool.free(h)
        assert h.buffer is None


def test_free_then_alloc_reuses_the_block(core_cls):
    """A freed block serves the next request of the same rounded size (a hit); others miss."""
    pool = make_pool(core_cls)
    a = pool.alloc(1000)
    where = addr(a)
    pool.free(a)
    b = pool.alloc(4000)                 # same 4096-byte page
    assert addr(b) == where and pool.stats()["num_pool_hits"] == 1
    c = pool.alloc(5000)                 # 8192: a different free list
    assert addr(c) != where and pool.stats()["num_pool_hits"] == 1


def test_round_strategy_shares_power_of_two_buckets(core_cls):
    """Round: 5000 and 8000 bytes both live in the 8192 bucket, so one block serves both."""
    pool = make_pool(core_cls, RoundStrategy())
    a = pool.alloc(5000)
    where = addr(a)
    pool.free(a)
    assert addr(pool.alloc(8000)) == where


def test_stats_follow_use(core_cls):
    """bytes_in_use / bytes_pooled / peak count rounded blocks; counters count calls."""
    pool = make_pool(core_cls)
    hs = [pool.alloc(100) for _ in range(3)]
    big = pool.alloc(3 * PAGE)
    for h in hs:
        pool.free(h)
    s = pool.stats()
    assert (s["bytes_in_use"], s["bytes_pooled"], s["peak_bytes_in_use"]) == (3 * PAGE, 3 * PAGE, 6 * PAGE)
    assert (s["num_alloc"], s["num_free"], s["num_pool_hits"]) == (4, 3, 0)
    pool.free(big)
    pool.release_all()
    s = pool.stats()
    assert (s["bytes_in_use"], s["bytes_pooled"], s["num_release_all"]) == (0, 0, 1)
    assert pool.device.bytes_held == 0


def test_release_all_keeps_blocks_in_use(core_cls):
    """release_all returns only free blocks to the device; lent blocks stay valid."""
    pool = make_pool(core_cls)
    keep, drop = pool.alloc(PAGE), pool.alloc(2 * PAGE)
    keep.buffer[:] = 3
    pool.free(drop)
    pool.release_all()
    assert pool.device.bytes_held == PAGE and pool.free_counts() == {}
    assert int(keep.buffer.sum()) == 3 * PAGE


def test_reserve_rule_releases_before_a_miss(core_cls):
    """A miss that would eat into the reserve (here 20% of 10 pages) first empties the pool."""
    pool = make_pool(core_cls, limit=10 * PAGE, reserve=20)
    for h in [pool.alloc(PAGE) for _ in range(3)]:
        pool.free(h)
    pool.alloc(5 * PAGE)                 # 5 <= free 7 - reserve 2: pool kept
    assert pool.stats()["num_release_all"] == 0 and pool.stats()["bytes_pooled"] == 3 * PAGE
    pool.release_all()
    for h in [pool.alloc(PAGE) for _ in range(2)]:
        pool.free(h)
    pool.alloc(2 * PAGE)                 # free 3 - reserve 2 = 1 < 2 pages: release first
    s = pool.stats()
    assert (s["num_release_all"], s["bytes_pooled"]) == (2, 0)
    assert pool.device.bytes_held == 7 * PAGE


def test_out_of_memory_releases_pool_and_retries(core_cls):
    """When the device refuses, the pool is released and the allocation retried once."""
    pool = make_pool(core_cls, limit=10 * PAGE)
    for h in [pool.alloc(PAGE) for _ in range(8)]:
        pool.free(h)
    big = pool.alloc(4 * PAGE)           # 8 pooled + 4 > 10: refused, release, retry succeeds
    assert big.size == 4 * PAGE
    s = pool.stats()
    assert (s["num_release_all"], s["bytes_pooled"], s["bytes_in_use"]) == (1, 0, 4 * PAGE)


def test_out_of_memory_error_names_size_context_and_stats(core_cls):
    """A request that cannot fit even after release raises MXNetError; the pool stays usable."""
    pool = make_pool(core_cls, limit=10 * PAGE)
    live = [pool.alloc(PAGE) for _ in range(8)]
    with pytest.raises(MXNetError) as err:
        pool.alloc(3 * PAGE - 5)
    msg = str(err.value)
    assert "out of memory on cpu(0)" in msg and str(3 * PAGE - 5) in msg and "bytes_in_use" in msg
    assert pool.stats()["num_alloc"] == 8
    pool.free(live.pop())
    assert pool.alloc(PAGE).size == PAGE


def test_bad_frees_are_errors_not_corruption(core_cls):
    """Double free, foreign handles and handles of another pool raise MXNetError and change nothing."""
    pool, other = make_pool(core_cls), make_pool(core_cls, ctx=cpu(1))
    h = pool.alloc(10)
    pool.free(h)
    before = pool.stats()
    with pytest.raises(MXNetError, match="double free"):
        pool.free(h)
    with pytest.raises(MXNetError, match="double free"):
        pool.direct_free(h)
    with pytest.raises(MXNetError, match="foreign handle"):
        pool.free(Handle(np.empty(10, np.uint8), 10, cpu()))
    with pytest.raises(MXNetError, match="belongs to the pool of cpu\\(1\\)"):
        pool.free(other.alloc(10))
    assert pool.stats() == before and pool.free_counts() == {PAGE: 1}
    with pytest.raises(MXNetError, match="cannot allocate -1 bytes"):
        pool.alloc(-1)


def test_direct_free_bypasses_the_pool(core_cls):
    """direct_free gives the block to the device at once; nothing is pooled."""
    pool = make_pool(core_cls)
    h = pool.alloc(PAGE)
    pool.direct_free(h)
    s = pool.stats()
    assert (s["bytes_in_use"], s["bytes_pooled"], s["num_free"]) == (0, 0, 1)
    assert pool.device.bytes_held == 0 and pool.device.num_device_free == 1


def test_unpooled_frees_to_the_device(core_cls):
    """Unpooled: every alloc goes to the device and every free comes straight back."""
    pool = make_pool(core_cls, UnpooledStrategy())
    for _ in range(3):
        pool.free(pool.alloc(100))
    assert pool.device.num_device_alloc == 3 and pool.device.bytes_held == 0
    assert pool.stats()["num_pool_hits"] == 0


def test_twins_agree_through_the_manager():
    """Pure and Cython bookkeeping give the same hits, stats and device traffic on one sequence."""
    results = []
    for cls in (PoolCore, cython_core_cls()):
        rng = random.Random(3)
        pool = make_pool(cls, RoundStrategy(), limit=64 * PAGE)
        live, hits = [], []
        for _ in range(400):
            if live and rng.random() < 0.45:
                pool.free(live.pop(rng.randrange(len(live))))
            else:
                before = pool.stats()["num_pool_hits"]
                try:
                    live.append(pool.alloc(rng.randrange(1, 6 * PAGE)))
                except MXNetError:
                    hits.append("oom")
                    continue
                hits.append(pool.stats()["num_pool_hits"] - before)
        results.append((hits, pool.stats(), pool.device.num_device_alloc, pool.device.bytes_held))
    assert results[0] == results[1]


@pytest.mark.timeout(60)
def test_concurrent_alloc_free_from_many_threads(core_cls):
    """Threads allocating and freeing at once never share a block and leave consistent counters."""
    pool = make_pool(core_cls, RoundStrategy())
    n_threads, n_iter = 4, 1500
    errors = []
    barrier = threading.Barrier(n_threads)

    def worker(tid):
        rng = random.Random(tid)
        live = []
        barrier.wait()
        try:
            for _ in range(n_iter):
                if live and rng.random() < 0.5:
                    h, mark = live.pop(rng.randrange(len(live)))
                    # Another thread writing our block would have changed the mark.
                    assert (h.buffer == mark).all(), "block shared between two live handles"
                    pool.free(h)
                else:
                    h = pool.alloc(rng.choice((100, 5000, 9000, 70000)))
                    mark = (tid * 37 + len(live)) % 251
                    h.buffer[:] = mark
                    live.append((h, mark))
            for h, _ in live:
                pool.free(h)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    s = pool.stats()
    assert s["bytes_in_use"] == 0 and s["num_alloc"] == s["num_free"] > n_threads * n_iter // 3
    pooled = sum(count * pool._core.block_size(key) for key, count in pool.free_counts().items())
    assert s["bytes_pooled"] == pooled == pool.device.bytes_held
    assert s["num_pool_hits"] == s["num_alloc"] - pool.device.num_device_alloc


@pytest.mark.timeout(30)
@pytest.mark.parametrize("strategy", [NaiveStrategy(), UnpooledStrategy()], ids=["naive", "unpooled"])
def test_a_free_during_the_device_allocation_does_not_deadlock(core_cls, strategy):
    """The device allocation inside ``alloc`` can run the garbage collector, and a dying array's
    ``Chunk.__del__`` then frees another block into the same pool on the same thread (this once
    hung the test suite). The nested free must go through, and the counts stay right."""
    pool = make_pool(core_cls, strategy)
    victim = pool.alloc(PAGE)
    device_alloc = pool.device.alloc

    def alloc_and_collect(nbytes):
        block = device_alloc(nbytes)
        if victim.buffer is not None:
            pool.free(victim)           # what the collector's __del__ would do here
        return block

    pool.device.alloc = alloc_and_collect
    done = []
    worker = threading.Thread(target=lambda: done.append(pool.alloc(3 * PAGE)), daemon=True)
    worker.start()
    worker.join(10)
    assert done, "alloc deadlocked on a nested free"
    stats = pool.stats()
    assert stats["num_free"] == 1 and stats["num_alloc"] == 2
    pool.free(done[0])
