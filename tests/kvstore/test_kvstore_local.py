"""The ``local`` store: the threaded reduce, engine operations with priorities, asynchronous pushes,
and identical results on the naive and threaded engines.
"""
import threading

import numpy as np
import pytest

import mxref as mx
from mxref import engine
from mxref import kvstore as kv
from mxref.engine.base import FnProperty
from mxref.kvstore.local import reduce_sum


@pytest.mark.parametrize("n", [5, 4096 * 3 + 17, 50_000])
@pytest.mark.parametrize("nthreads", [1, 3, 4])
def test_reduce_sum_threads_bit_identical(n, nthreads):
    """Split over threads or not, the sum is the same left-to-right float32 sum, bit for bit."""
    rng = np.random.default_rng(n + nthreads)
    srcs = [rng.standard_normal(n).astype(np.float32) for _ in range(4)]
    expect = ((srcs[0] + srcs[1]) + srcs[2]) + srcs[3]
    out = np.empty(n, np.float32)
    reduce_sum(out, srcs, bound=1, nthreads=nthreads)
    np.testing.assert_array_equal(out, expect)
    inplace = srcs[0].copy()
    reduce_sum(inplace, [inplace] + srcs[1:], bound=1, nthreads=nthreads)
    np.testing.assert_array_equal(inplace, expect)


def test_big_arrays_use_the_reduction_threads(monkeypatch):
    """Above MXNET_KVSTORE_BIGARRAY_BOUND the ranges run on the 'kvstore reduce' threads."""
    monkeypatch.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "1000")
    monkeypatch.setenv("MXNET_KVSTORE_REDUCTION_NTHREADS", "3")
    names = set()
    from mxref.kvstore import local

    real = local._sum_range

    def spy(out, sources, lo, hi):
        names.add(threading.current_thread().name.split("_")[0])
        real(out, sources, lo, hi)

    monkeypatch.setattr(local, "_sum_range", spy)
    out = np.empty(50_000, np.float32)
    reduce_sum(out, [np.ones(50_000, np.float32)] * 2)
    assert names == {"kvstore reduce"} and (out == 2).all()
    names.clear()
    reduce_sum(out[:999], [np.ones(999, np.float32)] * 2)   # below the bound: the caller's thread
    assert names == {threading.current_thread().name.split("_")[0]}


def _train_like(kv_type, priorities):
    """Five keys of different sizes pushed from three CPU contexts for three steps, with SGD."""
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    shapes = [(7,), (64, 33), (3, 4, 5), (1000,), (2, 2)]
    rng = np.random.default_rng(0)
    store = kv.create(kv_type)
    store.set_optimizer(mx.optimizer.SGD(learning_rate=0.05, momentum=0.9, wd=1e-3))
    for k, s in enumerate(shapes):
        store.init(k, mx.nd.array(rng.standard_normal(s)))
    outs = {k: [mx.nd.zeros(s, ctx=c) for c in ctxs] for k, s in enumerate(shapes)}
    for _ in range(3):
        for k, s in enumerate(shapes):
            grads = [mx.nd.array(rng.standard_normal(s), ctx=c) for c in ctxs]
            store.push(k, grads, priority=priorities[k])
            store.pull(k, out=outs[k], priority=priorities[k])
    return {k: [o.asnumpy() for o in v] for k, v in outs.items()}


@pytest.mark.parametrize("kv_type", ["local", "device"])
def test_threaded_and_naive_engines_agree_and_priorities_do_not_matter(kv_type):
    """The same training-like pushes give bit-identical results on both engines, whatever the
    priorities (Module's -param_index, or reversed)."""
    old = engine.get().name
    try:
        engine.set_engine("NaiveEngine")
        ref = _train_like(kv_type, [0] * 5)
        engine.set_engine("ThreadedEnginePerDevice")
        for prios in ([-i for i in range(5)], [i for i in range(5)]):
            got = _train_like(kv_type, prios)
            for k in ref:
                for a, b in zip(ref[k], got[k]):
                    np.testing.assert_array_equal(a, b)
    finally:
        engine.set_engine(old)


def test_push_and_pull_are_prioritized_engine_ops(monkeypatch):
    """Every reduce, copy and pull is pushed as CPU_PRIORITIZED with the caller's priority."""
    old = engine.get().name
    eng = engine.set_engine("NaiveEngine")
    seen = []
    real = eng.push_sync

    def record(fn, ctx, const_vars=(), mutable_vars=(), prop=FnProperty.NORMAL, priority=0, name=None):
        seen.append((name, prop, priority))
        real(fn, ctx, const_vars, mutable_vars, prop, priority, name)

    try:
        monkeypatch.setattr(eng, "push_sync", record)
        store = kv.create("local")
        store.init(0, mx.nd.zeros((3,)))
        seen.clear()
        store.push(0, [mx.nd.ones((3,), ctx=mx.cpu(i)) for i in range(2)], priority=-4)
        store.pull(0, out=[mx.nd.zeros((3,), ctx=mx.cpu(i)) for i in range(2)], priority=-4)
        kv_ops = [s for s in seen if s[0].startswith("KVStore")]
        assert [s[0] for s in kv_ops] == ["KVStoreReduce", "KVStorePull", "KVStorePull"]
        assert all(p == FnProperty.CPU_PRIORITIZED and pr == -4 for _, p, pr in kv_ops)
    finally:
        monkeypatch.undo()
        engine.set_engine(old)


def test_push_returns_before_its_sources_are_ready():
    """A push waits in the engine, not in Python: it returns while a source is still being
    written, and the pull sees the value once that write completes."""
    old = engine.get().name
    eng = engine.set_engine("ThreadedEnginePerDevice")
    try:
        store = kv.create("local")
        store.init(0, mx.nd.zeros((4,)))
        a = mx.nd.zeros((4,), ctx=mx.cpu(1))
        gate = threading.Event()

        def slow_write(run_ctx):
            gate.wait(10)
            a._data()[...] = 5

        eng.push_sync(slow_write, a.context, (), (a._chunk.var,), name="slow_write")
        store.push(0, [a, mx.nd.ones((4,))])
        out = mx.nd.zeros((4,))
        store.pull(0, out=out)
        assert not gate.is_set()        # both calls returned while the source was pending
        gate.set()
        np.testing.assert_array_equal(out.asnumpy(), np.full(4, 6.0, np.float32))
    finally:
        gate.set()
        engine.set_engine(old)


def test_values_on_several_cpu_contexts_and_store_home(any_engine):
    """Values from cpu(0..3) are summed on cpu(0), where local keeps its values; a single value
    on another context is copied, not aliased."""
    store = kv.create("local")
    store.init(0, mx.nd.zeros((2, 2), ctx=mx.cpu(3)))
    assert store._store[0].context == mx.cpu(0)
    store.push(0, [mx.nd.ones((2, 2), ctx=mx.cpu(i)) * (i + 1) for i in range(4)])
    out = mx.nd.zeros((2, 2), ctx=mx.cpu(2))
    store.pull(0, out=out)
    assert out.asnumpy()[0, 0] == 10.0
    src = mx.nd.ones((2, 2), ctx=mx.cpu(1))
    store.push(0, src)
    src[:] = 9
    store.pull(0, out=out)
    assert out.asnumpy()[1, 1] == 1.0


@pytest.mark.parametrize("kv_type", ["local", "device"])
def test_failed_source_error_reaches_the_pull_and_store_recovers(any_engine, kv_type):
    """A value whose producing op failed makes the pulled array raise at the wait (with the
    failing op's name); the next push of good values works again."""
    store = kv.create(kv_type)
    store.init(0, mx.nd.zeros((3,)))
    bad = mx.nd.random.normal(0, -1, shape=(3,))           # fails inside the engine
    store.push(0, [bad, mx.nd.ones((3,), ctx=mx.cpu(1))])
    out = mx.nd.zeros((3,))
    store.pull(0, out=out)
    with pytest.raises(mx.MXNetError, match="_random_normal"):
        out.asnumpy()
    store.push(0, [mx.nd.ones((3,)), mx.nd.ones((3,), ctx=mx.cpu(1))])
    store.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(3, 2.0, np.float32))
