"""mx.gpu(i) end to end on the GPU runtime: arrays, copies on the copy workers, streams, storage."""
import threading

import numpy as np
import pytest

import mxref as mx
from mxref import storage
from mxref._ext.cuda import runtime
from mxref.base import MXNetError

pytestmark = pytest.mark.timeout(120)


def test_two_gpus_exist():
    assert mx.context.num_gpus() >= 2 or runtime.backend().name == "pycuda"
    free, total = mx.context.gpu_memory_info(0)
    assert 0 < free <= total


def test_relu_and_add_on_gpu0():
    x = np.linspace(-2, 2, 37).astype(np.float32)
    a = mx.nd.array(x, ctx=mx.gpu(0))
    assert a.context == mx.gpu(0)
    y = mx.nd.relu(a) + a
    assert y.context == mx.gpu(0)
    np.testing.assert_allclose(y.asnumpy(), np.maximum(x, 0) + x, rtol=1e-6)
    z = a * 2 - 1
    np.testing.assert_allclose(z.asnumpy(), x * 2 - 1, rtol=1e-6)


def test_copies_between_host_and_devices():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    host = mx.nd.array(x)
    g0 = host.copyto(mx.gpu(0))
    g1 = g0.as_in_context(mx.gpu(1))
    assert g1.context == mx.gpu(1) and g0.as_in_context(mx.gpu(0)) is g0
    back = (g1 + 1).copyto(mx.cpu())
    np.testing.assert_array_equal(back.asnumpy(), x + 1)
    target = mx.nd.zeros((3, 4), ctx=mx.gpu(0))
    g1.copyto(target)
    np.testing.assert_array_equal(target.asnumpy(), x)


def test_copies_run_on_copy_workers_and_kernels_on_worker_streams():
    """Host<->device copies are engine ops on the gpu's copy threads; kernels launch on the stream
    of the gpu worker thread that runs them (one stream per worker)."""
    from mxref import engine
    if engine.get().name == "NaiveEngine":
        pytest.skip("the naive engine runs everything on the caller's thread")
    seen = []
    real = runtime.copy_array

    def spy(dst, src):
        seen.append(threading.current_thread().name)
        real(dst, src)
    runtime.copy_array = spy
    try:
        a = mx.nd.array(np.ones(5, np.float32)).copyto(mx.gpu(0))
        b = mx.nd.relu(a)
        b.copyto(mx.cpu()).asnumpy()
    finally:
        runtime.copy_array = real
    assert seen and all(name.startswith("gpu(0) copy") for name in seen)
    mine = {k: s for k, s in runtime.streams().items() if k[0] == 0}
    workers = {k: s for k, s in mine.items() if k[1].startswith("gpu(0) worker")}
    assert workers and sum(s.launches for s in workers.values()) >= 1
    assert len({id(s) for s in mine.values()}) == len(mine)      # one stream per thread


def test_gpu_op_without_gpu_kernel_is_an_error_naming_the_op():
    a = mx.nd.array(np.ones((2, 3), np.float32), ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match="operator LRN has no kernel for device type 'gpu'"):
        mx.nd.LRN(a.reshape((1, 2, 3, 1)), nsize=3).asnumpy()


def test_numpy_cannot_read_a_gpu_array_by_mistake():
    a = mx.nd.array(np.ones(3, np.float32), ctx=mx.gpu(0))
    a.wait_to_read()
    with pytest.raises(MXNetError, match="host code cannot read device memory"):
        np.asarray(a._data())


def test_gpu_storage_pool_reuses_blocks_and_releases():
    ctx = mx.gpu(1)
    h = storage.alloc(1000, ctx)
    ptr = int(h.buffer)
    storage.free(h)
    h2 = storage.alloc(3000, ctx)
    assert int(h2.buffer) == ptr and storage.stats(ctx)["num_pool_hits"] >= 1
    storage.free(h2)
    storage.release_all(ctx)
    assert storage.stats(ctx)["bytes_pooled"] == 0


def test_missing_device_is_a_clear_error():
    n = mx.context.num_gpus()
    with pytest.raises(MXNetError, match=rf"gpu\({n}\) is not available"):
        mx.nd.zeros((2,), ctx=mx.gpu(n)).asnumpy()


def test_info_shows_the_launcher_and_devices(capsys):
    report = mx.info()
    assert report["gpus"] == mx.context.num_gpus()
    assert report["gpu.backend"].startswith(runtime.backend().name)
    assert "gpu.0" in report


def test_device_kvstore_across_two_gpus():
    """Each gpu(i) pushes i + 1; both pull the sum 1 + 2 = 3, reduced on the devices."""
    kv = mx.kv.create("device")
    kv.init(3, mx.nd.zeros((2, 3), ctx=mx.gpu(0)))
    kv.push(3, [mx.nd.ones((2, 3), ctx=mx.gpu(i)) * (i + 1) for i in range(2)])
    outs = [mx.nd.zeros((2, 3), ctx=mx.gpu(i)) for i in range(2)]
    kv.pull(3, out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full((2, 3), 3.0, np.float32))


@pytest.mark.parametrize("strategy", ["Naive", "Round"])
def test_emulated_device_memory_behind_the_pool_release_and_retry(strategy, monkeypatch):
    """An emulated gpu's memory is capped: a miss past the cap releases the pool and retries, and
    what still does not fit is an out-of-memory error naming the device."""
    from mxref.context import gpu
    from mxref.storage.device import GPUDevice
    from mxref.storage.pool import PooledStorageManager
    from mxref.storage.strategy import NaiveStrategy, RoundStrategy
    be = runtime.backend()
    if be.name != "emulate":
        pytest.skip("caps the emulator's device memory")
    mem = be.memory[1]
    monkeypatch.setattr(mem, "capacity", mem.held + (1 << 20))          # 1 MiB left on gpu(1)
    kind = NaiveStrategy() if strategy == "Naive" else RoundStrategy()
    pool = PooledStorageManager(gpu(1), GPUDevice(1), kind, reserve_percent=0)
    a = pool.alloc(400 << 10)
    pool.free(a)                                   # pooled: still held by the device
    assert pool.stats()["bytes_pooled"] > 0
    b = pool.alloc(700 << 10)                      # does not fit next to the pooled block: release, retry
    assert pool.stats()["num_release_all"] >= 1 and pool.stats()["bytes_pooled"] == 0
    with pytest.raises(MXNetError, match=r"out of memory on gpu\(1\)"):
        pool.alloc(700 << 10)
    pool.free(b)
    pool.release_all()
    assert pool.stats()["bytes_in_use"] == 0
