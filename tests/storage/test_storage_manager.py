"""Module-level storage API: one pool per context from env flags, totals, empty_cache, engine lifetimes."""
import threading

import numpy as np
import pytest

from mxref import engine as engine_mod
from mxref import storage
from mxref.base import MXNetError
from mxref.context import Context, cpu, cpu_pinned, gpu, num_gpus
from mxref.storage import manager


def test_pool_per_context_created_once(fresh_storage):
    """get_manager returns one pool per context, even when threads race to create it."""
    got = []
    threads = [threading.Thread(target=lambda: got.append(storage.get_manager(cpu(3)))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(m) for m in got}) == 1
    assert storage.get_manager(cpu(0)) is not got[0]


def test_repeated_lookups_and_reset(fresh_storage):
    """Equal Context objects share a pool whichever was looked up last; reset() forgets the pool
    even for the very Context object looked up just before."""
    ctx = cpu(1)
    first = storage.get_manager(ctx)
    assert storage.get_manager(ctx) is first and storage.get_manager(cpu(1)) is first
    assert storage.get_manager(cpu(2)) is not first and storage.get_manager(ctx) is first
    manager.reset()
    fresh = storage.get_manager(ctx)
    assert fresh is not first and storage.get_manager(cpu(1)) is fresh


def test_defaults_pool_cpu_with_naive_strategy(fresh_storage):
    """CPU defaults to the Naive pool with a 5% reserve; cpu_shared is never pooled."""
    m = storage.get_manager(cpu())
    assert (m.strategy.kind, m.strategy.page_size, m.reserve_percent) == ("Naive", 4096, 5)
    assert storage.get_manager(cpu_pinned()).strategy.kind == "Naive"
    assert storage.get_manager(Context("cpu_shared", 0)).strategy.kind == "Unpooled"


def test_env_flags_choose_strategy_and_reserve(fresh_storage):
    """MXNET_CPU_MEM_POOL_TYPE / _RESERVE configure new pools; naive storage manager disables pooling."""
    fresh_storage.setenv("MXNET_CPU_MEM_POOL_TYPE", "Round")
    fresh_storage.setenv("MXNET_CPU_MEM_POOL_RESERVE", "12")
    m = storage.get_manager(cpu())
    assert (m.strategy.kind, m.reserve_percent) == ("Round", 12)
    manager.reset()
    fresh_storage.setenv("MXNET_USE_NAIVE_STORAGE_MANAGER", "1")
    assert storage.get_manager(cpu()).strategy.kind == "Unpooled"
    manager.reset()
    fresh_storage.delenv("MXNET_USE_NAIVE_STORAGE_MANAGER")
    fresh_storage.setenv("MXNET_CPU_MEM_POOL_TYPE", "Buddy")
    with pytest.raises(MXNetError, match="unknown memory pool type 'Buddy'"):
        storage.alloc(10, cpu())
    fresh_storage.setenv("MXNET_CPU_MEM_POOL_TYPE", "Naive")
    fresh_storage.setenv("MXNET_CPU_MEM_POOL_RESERVE", "150")
    with pytest.raises(MXNetError, match="reserve percent for cpu\\(0\\)"):
        storage.alloc(10, cpu())


def test_cpu_limit_is_shared_by_host_contexts(fresh_storage):
    """MXREF_CPU_MEM_LIMIT caps host memory for the whole process, across cpu(i) contexts."""
    fresh_storage.setenv("MXREF_CPU_MEM_LIMIT", str(4 * 4096))
    a = storage.alloc(3 * 4096, cpu(0))
    with pytest.raises(MXNetError, match="out of memory on cpu\\(1\\)"):
        storage.alloc(2 * 4096, cpu(1))
    storage.direct_free(a)
    assert storage.alloc(2 * 4096, cpu(1)).size == 2 * 4096


def test_module_api_alloc_free_stats_release(fresh_storage):
    """alloc/free/stats/release_all through the module; stats() without ctx sums every pool."""
    h0, h1 = storage.alloc(100, cpu(0)), storage.alloc(5000, cpu(1))
    assert storage.stats(cpu(0))["bytes_in_use"] == 4096
    total = storage.stats()
    assert (total["bytes_in_use"], total["num_alloc"]) == (4096 + 8192, 2)
    storage.free(h0)
    storage.free(h1)
    assert storage.stats()["bytes_pooled"] == 4096 + 8192
    storage.release_all(cpu(1))
    assert (storage.stats(cpu(0))["bytes_pooled"], storage.stats(cpu(1))["bytes_pooled"]) == (4096, 0)
    cpu(0).empty_cache()
    assert storage.stats()["bytes_pooled"] == 0
    with pytest.raises(MXNetError, match="double free"):
        storage.free(h0)
    with pytest.raises(MXNetError, match="foreign handle"):
        storage.direct_free(storage.Handle(np.zeros(4, np.uint8), 4, cpu()))
    assert set(storage.describe()) == {"cpu(0)", "cpu(1)"}


def test_set_core_picks_bookkeeping(fresh_storage):
    """set_core('python') forces the pure twin for new pools; bad names are errors."""
    manager.set_core("python")
    assert storage.get_manager(cpu(5)).core_kind == "python" and manager.core_kind() == "python"
    with pytest.raises(MXNetError, match="expected 'python', 'cython' or None"):
        manager.set_core("fortran")


# NOTE: method="thread": a hung engine would also hang the ``stop()`` in ``finally``, which the
# default signal-based timeout cannot get past.
@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("engine_name", ["NaiveEngine", "ThreadedEnginePerDevice"])
def test_memory_returns_only_after_queued_uses(fresh_storage, engine_name):
    """The NDArray lifetime contract: allocate in the first writer, free via delete_variable.

    Every op queued on the variable still sees its block lent out; after the delete runs, the
    block is back in the pool.
    """
    eng = engine_mod.ENGINE_TYPES[engine_name]()
    try:
        ctx, var, box, seen = cpu(), eng.new_variable(), {}, []

        def write(rctx):
            box["h"] = storage.alloc(4000, rctx.ctx)      # lazy: on the worker, at first write
            box["h"].buffer[:] = 5

        def read(rctx):
            seen.append((int(box["h"].buffer.sum()), storage.stats(ctx)["bytes_in_use"]))

        eng.push_sync(write, ctx, mutable_vars=[var], name="write")
        for _ in range(3):
            eng.push_sync(read, ctx, const_vars=[var], name="read")
        eng.delete_variable(lambda rctx: storage.free(box["h"]), ctx, var)
        eng.wait_for_all()
        assert seen == [(5 * 4000, 4096)] * 3
        s = storage.stats(ctx)
        assert (s["bytes_in_use"], s["bytes_pooled"], s["num_free"]) == (0, 4096, 1)
    finally:
        eng.stop()


@pytest.mark.skipif(num_gpus() == 0, reason="needs a GPU and PyCUDA")
def test_gpu_pool_reuses_device_blocks(fresh_storage):
    """On a GPU the pool hands out PyCUDA allocations and reuses them after free."""
    h = storage.alloc(1000, gpu(0))
    ptr = int(h.buffer)
    storage.free(h)
    h2 = storage.alloc(3000, gpu(0))
    assert int(h2.buffer) == ptr and storage.stats(gpu(0))["num_pool_hits"] == 1
    storage.free(h2)
    storage.release_all(gpu(0))
    assert storage.stats(gpu(0))["bytes_pooled"] == 0


def test_gpu_context_without_gpu_is_a_clear_error(fresh_storage):
    """Allocating on a GPU that is not there raises MXNetError instead of touching CUDA at import."""
    if num_gpus() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(MXNetError, match="gpu\\(0\\) is not available"):
        storage.alloc(10, gpu(0))
