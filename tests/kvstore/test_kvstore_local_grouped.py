"""The ``local``/``device`` stores hand an optimizer's ``Updater`` all keys of one push together
(fused multi-tensor updates), and ``Module`` pushes all its dense parameters in one call."""
import numpy as np
import pytest

import mxref as mx
from mxref import kvstore as kv
from mxref import optimizer as opt

SHAPES = [(7,), (64, 33), (3, 4, 5), (1000,), (2, 2), (5, 3)]


def _store(kv_type, updater=None):
    store = kv.create(kv_type)
    if updater is None:
        store.set_optimizer(opt.SGD(learning_rate=0.05, momentum=0.9, wd=1e-3, rescale_grad=0.5))
    else:
        store._set_updater(updater)
    rng = np.random.default_rng(0)
    for k, s in enumerate(SHAPES):
        store.init(f"w{k}", mx.nd.array(rng.standard_normal(s)))
    return store


def _grads(step):
    rng = np.random.default_rng(100 + step)
    return [mx.nd.array(rng.standard_normal(s)) for s in SHAPES]


def _pull_all(store):
    outs = [mx.nd.zeros(s) for s in SHAPES]
    store.pull([f"w{k}" for k in range(len(SHAPES))], out=outs)
    return [o.asnumpy() for o in outs]


@pytest.mark.parametrize("kv_type", ["local", "device"])
@pytest.mark.parametrize("agg", ["1", "4"])
def test_one_push_of_all_keys_is_bitwise_the_per_key_pushes(kv_type, agg, monkeypatch):
    monkeypatch.setenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", agg)
    grouped, single = _store(kv_type), _store(kv_type)
    keys = [f"w{k}" for k in range(len(SHAPES))]
    for step in range(3):
        grouped.push(keys, _grads(step))
        for k, g in zip(keys, _grads(step)):
            single.push(k, g)
    for a, b in zip(_pull_all(grouped), _pull_all(single)):
        np.testing.assert_array_equal(a, b)


def test_the_updater_gets_the_keys_together_in_key_order(monkeypatch):
    store = _store("local")
    calls = []
    real = opt.Updater.__call__

    def spy(self, index, grad, weight):
        calls.append(index)
        real(self, index, grad, weight)
    monkeypatch.setattr(opt.Updater, "__call__", spy)
    g = _grads(0)
    store.push(["w3", "w0", "w5"], [g[3], g[0], g[5]])
    assert calls == [["w0", "w3", "w5"]]           # sorted by init order, as MXNet orders keys
    calls.clear()
    store.push("w1", _grads(0)[1])                  # one key: the single-key call
    assert calls == ["w1"]


def test_a_custom_updater_is_still_called_once_per_key():
    seen = []

    def updater(key, merged, stored):
        seen.append((key, merged.shape))
        stored += merged
    store = _store("local", updater)
    store.push([f"w{k}" for k in range(len(SHAPES))], _grads(0))
    assert seen == [(f"w{k}", s) for k, s in enumerate(SHAPES)]


def test_fused_updates_make_fewer_engine_operations(monkeypatch):
    """Six keys with aggregation 4: two ``multi_sgd_mom_update`` operations instead of six."""
    counts = {}
    real = mx.nd.multi_sgd_mom_update

    def count(*args, **kw):
        counts[kw["num_weights"]] = counts.get(kw["num_weights"], 0) + 1
        return real(*args, **kw)
    monkeypatch.setattr(mx.nd, "multi_sgd_mom_update", count)
    store = _store("local")
    store.push([f"w{k}" for k in range(len(SHAPES))], _grads(0))
    mx.nd.waitall()
    assert counts == {4: 1, 2: 1}


def _fit(kvstore):
    np.random.seed(0)
    mx.random.seed(0)
    data = mx.nd.array(np.random.RandomState(1).rand(64, 10))
    label = mx.nd.array(np.random.RandomState(2).randint(0, 3, 64))
    net = mx.sym.Variable("data")
    for i in range(3):
        net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=8, name=f"fc{i}"), act_type="tanh")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name="out"), name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    it = mx.io.NDArrayIter(data, label, batch_size=16)
    mod.fit(it, num_epoch=2, kvstore=kvstore, optimizer="sgd", initializer=mx.init.Xavier(),
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4})
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


@pytest.mark.parametrize("kv_type", ["local", "device"])
def test_module_fit_through_a_store_object_matches_the_local_updater(kv_type):
    """``fit.py`` passes a store object, so the optimizer runs in the store (update_on_kvstore):
    the grouped push gives the same weights as Module's own updater without a store."""
    with_store = _fit(mx.kv.create(kv_type))
    without = _fit(None)
    assert with_store.keys() == without.keys()
    for k in with_store:
        np.testing.assert_array_equal(with_store[k], without[k], err_msg=k)


@pytest.mark.parametrize("kv_type", ["local", "device"])
def test_a_pull_of_several_keys_is_one_engine_operation(kv_type, monkeypatch):
    """Six keys into outputs on two CPU contexts: one ``KVStorePull`` per output context, the
    values right; one key keeps one operation per output."""
    from mxref import engine
    names = []
    eng = engine.get()
    real = eng.push_sync

    def record(fn, ctx, const_vars=(), mutable_vars=(), *args, **kw):
        names.append((kw.get("name") or (args[2] if len(args) > 2 else None), len(mutable_vars)))
        return real(fn, ctx, const_vars, mutable_vars, *args, **kw)
    store = _store(kv_type, updater=lambda k, m, s: None)
    monkeypatch.setattr(eng, "push_sync", record)
    outs = [[mx.nd.zeros(s, ctx=mx.cpu(0)), mx.nd.zeros(s, ctx=mx.cpu(1))] for s in SHAPES]
    store.pull([f"w{k}" for k in range(len(SHAPES))], out=outs)
    assert sorted(n for n in names if n[0] == "KVStorePull") == [("KVStorePull", 6)] * 2
    names.clear()
    store.pull("w0", out=[mx.nd.zeros(SHAPES[0]), mx.nd.zeros(SHAPES[0])])
    assert [n for n in names if n[0] == "KVStorePull"] == [("KVStorePull", 1)] * 2
    rng = np.random.default_rng(0)
    for pair, s in zip(outs, SHAPES):
        expect = rng.standard_normal(s).astype(np.float32)
        for o in pair:
            np.testing.assert_array_equal(o.asnumpy(), expect)


def test_only_local_push_and_pull_are_grouped():
    """Stores that send keys elsewhere (servers, a collective) keep their per-key push and pull."""
    from mxref.kvstore.device import DeviceKVStore
    from mxref.kvstore.local import LocalKVStore
    from mxref.kvstore.ps.allreduce import AllreduceKVStore
    from mxref.kvstore.ps.worker import DistKVStore

    assert object.__new__(LocalKVStore).groups_keys()
    assert object.__new__(DeviceKVStore).groups_keys()
    assert not object.__new__(DistKVStore).groups_keys()
    assert not object.__new__(AllreduceKVStore).groups_keys()
