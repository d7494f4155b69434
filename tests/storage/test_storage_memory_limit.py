"""Per-device memory caps (``mx.context.set_memory_limit``, ``MXREF_DEVICE_MEMORY_LIMIT``): the pool
of a capped device holds at most its limit, releases its pooled blocks before giving up, and
fails with an out-of-memory error naming the device, the request and what is in use; a model
that does not fit one capped device trains split across two."""
import gc

import numpy as np
import pytest

import mxref as mx
from mxref import storage
from mxref.base import MXNetError
from mxref.context import memory_limit, set_memory_limit
from mxref.storage.device import CPUDevice
from mxref.storage.pool import PooledStorageManager
from mxref.storage.strategy import NaiveStrategy

MB = 1 << 20


@pytest.fixture
def capped():
    """Devices no other test uses, capped for one test, then uncapped and emptied."""
    devs = [mx.cpu(11), mx.cpu(12)]
    yield devs
    mx.nd.waitall()
    for d in devs:
        set_memory_limit(d, None)
        storage.release_all(d)


def test_pool_enforces_the_cap_and_releases_pooled_blocks_first(capped, core_cls):
    mgr = PooledStorageManager(capped[0], CPUDevice(None), NaiveStrategy(), 0, core_cls)
    set_memory_limit(capped[0], 3 * MB)
    a = mgr.alloc(2 * MB)
    with pytest.raises(MXNetError, match=r"out of memory on cpu\(11\): allocating 2097153 bytes.*"
                                         r"limit of 3145728 bytes, with 2097152 bytes in use"):
        mgr.alloc(2 * MB + 1)
    mgr.free(a)                          # pooled, still held: a different size must release it
    b = mgr.alloc(MB + MB // 2)
    assert mgr.stats()["bytes_pooled"] == 0 and mgr.stats()["num_release_all"] == 1
    mgr.free(b)
    set_memory_limit(capped[0], None)
    mgr.alloc(8 * MB)                    # uncapped again


def test_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("MXREF_DEVICE_MEMORY_LIMIT", "cpu(3)=64MB, gpu=1.5GB ,cpu(0)=1G")
    assert memory_limit(mx.cpu(3)) == 64 * MB and memory_limit(mx.cpu(0)) == 1 << 30
    assert memory_limit(mx.gpu(2)) == 3 * (1 << 29) and memory_limit(mx.cpu(4)) is None
    set_memory_limit(mx.cpu(3), "1KB")    # the API wins over the environment
    try:
        assert memory_limit(mx.cpu(3)) == 1024
        assert storage.describe(mx.cpu(3))["cpu(3)"].endswith("limit 1024 bytes)")     # mxref.info()
    finally:
        set_memory_limit(mx.cpu(3), None)
    assert memory_limit(mx.cpu(3)) == 64 * MB
    monkeypatch.setenv("MXREF_DEVICE_MEMORY_LIMIT", "cpu(1):64MB")
    with pytest.raises(MXNetError, match="'cpu\\(1\\):64MB' is not '<device>=<size>'"):
        memory_limit(mx.cpu(1))
    monkeypatch.setenv("MXREF_DEVICE_MEMORY_LIMIT", "cpu(1)=lots")
    with pytest.raises(MXNetError, match="cannot read 'lots' as a size"):
        memory_limit(mx.cpu(1))


def two_layer_net():
    data = mx.sym.Variable("data")
    with mx.AttrScope(ctx_group="first"):
        h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=1024, name="fc1"), act_type="relu")
    with mx.AttrScope(ctx_group="second"):
        h = mx.sym.FullyConnected(h, num_hidden=1024, name="fc2")
        return mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(h)))


def train_once(net, ctx):
    ex = net.simple_bind(ctx, data=(16, 1024))
    ex.forward(is_train=True)
    ex.backward()
    mx.nd.waitall()


def test_a_model_too_big_for_one_capped_device_runs_split_across_two(capped):
    """Weights and gradients: 2 x (1024 x 1024) floats per layer = 8 MB each; a 12 MB device holds
    one layer, not two."""
    for d in capped:
        set_memory_limit(d, 12 * MB)
    net = two_layer_net()
    with pytest.raises(MXNetError, match=r"out of memory on cpu\(11\).*in use"):
        train_once(net, capped[0])
    gc.collect()                           # the failed executor's arrays go back to the pool
    try:
        mx.nd.waitall()
    except MXNetError as e:                # other operations of the failed bind hit the same cap
        assert "out of memory on cpu(11)" in str(e)
    storage.release_all(capped[0])
    assert storage.stats(capped[0])["bytes_in_use"] == 0
    ex = net.simple_bind(capped[0], data=(16, 1024), group2ctx={"first": capped[0], "second": capped[1]})
    rng = np.random.RandomState(0)
    for arr in ex.arg_dict.values():
        arr[:] = rng.uniform(-0.05, 0.05, arr.shape)
    ex.forward(is_train=True)
    ex.backward()
    assert np.isfinite(ex.outputs[0].asnumpy()).all()
    assert ex.grad_dict["fc2_weight"].context == capped[1]
    assert np.abs(ex.grad_dict["fc1_weight"].asnumpy()).sum() > 0
    for d in capped:
        used = storage.stats(d)["bytes_in_use"] + storage.stats(d)["bytes_pooled"]
        assert 8 * MB <= used <= 12 * MB, (d, used)
