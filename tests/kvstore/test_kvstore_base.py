"""KVStore API semantics shared by ``local`` and ``device`` (``docs/mxnet-semantics.md`` item 15).

Push sums a list of values, a pull into a list broadcasts, without an updater a push replaces the
value, with one the updater is called once with the sum; key and shape errors raise
``MXNetError`` at the call, naming the key. Each test runs on both engines and both store types.
"""
import numpy as np
import pytest

import mxref as mx
from mxref import kvstore as kv

SHAPE = (2, 3)
CTXS = [mx.cpu(0), mx.cpu(1)]


def _vals(scale, ctxs=CTXS, shape=SHAPE):
    return [mx.nd.ones(shape, ctx=c) * (scale + i) for i, c in enumerate(ctxs)]


def _outs(ctxs=CTXS, shape=SHAPE):
    return [mx.nd.zeros(shape, ctx=c) for c in ctxs]


def test_push_list_sums_and_pull_list_broadcasts(any_engine, kv_type):
    """Values over devices are summed; every output of a pull gets the stored value."""
    store = kv.create(kv_type)
    store.init(3, mx.nd.ones(SHAPE))
    store.push(3, _vals(1.0))                     # 1 + 2
    outs = _outs()
    store.pull(3, out=outs)
    for o, c in zip(outs, CTXS):
        assert o.context == c
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 3.0, np.float32))


def test_push_without_updater_replaces(any_engine, kv_type):
    """Two pushes in a row: the second value replaces the first, nothing accumulates."""
    store = kv.create(kv_type)
    store.init("w", mx.nd.ones(SHAPE) * 10)
    store.push("w", mx.nd.ones(SHAPE) * 4)
    store.push("w", _vals(5.0))                   # 5 + 6
    out = mx.nd.zeros(SHAPE)
    store.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 11.0, np.float32))


def test_init_copies_the_value(any_engine, kv_type):
    """Changing the array given to init afterwards does not change the store."""
    store = kv.create(kv_type)
    a = mx.nd.ones(SHAPE) * 2
    store.init(0, a)
    a[:] = 7
    out = mx.nd.zeros(SHAPE)
    store.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 2.0, np.float32))


def test_updater_called_once_with_the_sum(any_engine, kv_type):
    """With an updater a push over three devices calls it once, with the sum, in key order."""
    store = kv.create(kv_type)
    calls = []

    def update(key, merged, stored):
        calls.append((key, merged.asnumpy().copy()))
        stored[:] = stored * 2 + merged

    store._set_updater(update)
    store.init([7, 5], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE)])
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    store.push([7, 5, 7], [_vals(1.0, ctxs), mx.nd.ones(SHAPE) * 10, mx.nd.ones(SHAPE) * 100])
    outs = _outs()
    store.pull([7, 5], out=outs)
    # key 7: values 1, 2, 3 and 100 merged into one call; MXNet sorts the keys of one call
    assert [k for k, _ in calls] == [5, 7]
    np.testing.assert_array_equal(calls[1][1], np.full(SHAPE, 106.0, np.float32))
    np.testing.assert_array_equal(outs[0].asnumpy(), np.full(SHAPE, 2 + 106.0, np.float32))
    np.testing.assert_array_equal(outs[1].asnumpy(), np.full(SHAPE, 2 + 10.0, np.float32))


def test_set_updater_alias_and_str_keys(any_engine, kv_type):
    """``set_updater`` is ``_set_updater``; str keys reach the updater as str."""
    store = kv.create(kv_type)
    seen = []
    store.set_updater(lambda k, g, w: (seen.append(k), w.__setitem__(slice(None), w + g)))
    store.init("bias", mx.nd.zeros(SHAPE))
    store.push("bias", mx.nd.ones(SHAPE))
    out = mx.nd.zeros(SHAPE)
    store.pull("bias", out=out)
    assert seen == ["bias"]
    assert out.asnumpy()[0, 0] == 1.0


def test_pushpull_and_broadcast(any_engine, kv_type):
    """pushpull = push then pull (into the values without out=); broadcast = init then pull."""
    store = kv.create(kv_type)
    store.init(1, mx.nd.zeros(SHAPE))
    vals = _vals(1.0)
    store.pushpull(1, vals)
    for v in vals:
        np.testing.assert_array_equal(v.asnumpy(), np.full(SHAPE, 3.0, np.float32))
    outs = _outs()
    store.pushpull(1, _vals(4.0), out=outs)
    assert outs[1].asnumpy()[0, 0] == 9.0
    outs = _outs()
    store.broadcast(2, mx.nd.ones(SHAPE) * 5, out=outs)
    assert [o.asnumpy()[1, 2] for o in outs] == [5.0, 5.0]
    with pytest.raises(mx.MXNetError, match="duplicate init of key 2"):
        store.broadcast(2, mx.nd.ones(SHAPE), out=outs)


def test_lists_of_keys_with_lists_of_values(any_engine, kv_type):
    """A list of keys takes one value (or one list over devices) per key, for push and pull."""
    store = kv.create(kv_type)
    keys = ["a", "b", "c"]
    store.init(keys, [mx.nd.zeros(SHAPE)] * 3)
    store.push(keys, [_vals(1.0), mx.nd.ones(SHAPE) * 4, _vals(10.0)])
    outs = [_outs(), _outs(), _outs()]
    store.pull(keys, out=outs)
    got = [[o.asnumpy()[0, 0] for o in row] for row in outs]
    assert got == [[3.0, 3.0], [4.0, 4.0], [21.0, 21.0]]


# -- errors --------------------------------------------------------------------------------------

def test_mixed_key_types_raise(kv_type):
    """Int and str keys never mix, within one call or across calls."""
    store = kv.create(kv_type)
    with pytest.raises(mx.MXNetError, match="inconsistent types of keys"):
        store.init([1, "a"], [mx.nd.ones(SHAPE)] * 2)
    store.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match="Mixed key types"):
        store.init("a", mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match="Mixed key types"):
        store.push("3", mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match="unexpected type for keys: float"):
        store.push(3.5, mx.nd.ones(SHAPE))


def test_double_init_and_uninitialized_keys_raise(kv_type):
    """A second init of a key, or a push/pull of a key never inited, raise at the call."""
    store = kv.create(kv_type)
    store.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match="duplicate init of key 3"):
        store.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match="duplicate init of key 4"):
        store.init(4, [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE)])
    with pytest.raises(mx.MXNetError, match="key 9 has not been inited"):
        store.pull(9, out=mx.nd.zeros(SHAPE))
    with pytest.raises(mx.MXNetError, match="key 9 has not been inited"):
        store.push(9, mx.nd.zeros(SHAPE))
    with pytest.raises(mx.MXNetError, match="out= is required"):
        store.pull(3)


def test_shape_and_dtype_mismatch_name_the_key(kv_type):
    """Pushing or pulling an array of another shape or dtype raises, naming the key and shapes."""
    store = kv.create(kv_type)
    store.init("fc1_weight", mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match=r"key 'fc1_weight' holds shape \(2, 3\).*\(3, 3\)"):
        store.push("fc1_weight", [mx.nd.ones(SHAPE), mx.nd.ones((3, 3))])
    with pytest.raises(mx.MXNetError, match=r"key 'fc1_weight' holds dtype float32.*float16"):
        store.push("fc1_weight", mx.nd.ones(SHAPE, dtype="float16"))
    with pytest.raises(mx.MXNetError, match=r"key 'fc1_weight' holds shape"):
        store.pull("fc1_weight", out=mx.nd.zeros((6,)))
    with pytest.raises(mx.MXNetError, match="2 keys need a list of 2 values"):
        store.push(["fc1_weight", "x"], [mx.nd.ones(SHAPE)])
    with pytest.raises(mx.MXNetError, match="no values given for key 'fc1_weight'"):
        store.push("fc1_weight", [])
    with pytest.raises(mx.MXNetError, match="must be NDArrays"):
        store.push("fc1_weight", np.ones(SHAPE))


# -- optimizer ---------------------------------------------------------------------------------------

def test_set_optimizer_updates_and_states_round_trip(any_engine, kv_type, tmp_path):
    """set_optimizer keeps per-key state (momentum); saved states reload into a fresh store."""
    def run(store, steps):
        out = mx.nd.zeros(SHAPE)
        for _ in range(steps):
            store.push(0, _vals(1.0))
            store.pull(0, out=out)
        return out.asnumpy()

    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    store = kv.create(kv_type)
    store.set_optimizer(opt)
    assert store.is_capable("optimizer") and store.is_capable("OPTIMIZER")
    store.init(0, mx.nd.ones(SHAPE))
    w = run(store, 2)
    # grad 3 each step: m1 = -0.3, w1 = 0.7; m2 = 0.9*m1 - 0.3 = -0.57, w2 = 0.13
    np.testing.assert_allclose(w, np.full(SHAPE, 0.13, np.float32), rtol=1e-5)
    fname = str(tmp_path / "kv.states")
    store.save_optimizer_states(fname, dump_optimizer=True)
    after = run(store, 1)

    fresh = kv.create(kv_type)
    fresh.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.0))
    fresh.init(0, mx.nd.array(w))
    fresh.load_optimizer_states(fname)
    assert fresh._updater.optimizer.lr == 0.1        # the dumped optimizer came back too
    np.testing.assert_allclose(run(fresh, 1), after, rtol=1e-6)


def test_optimizer_states_need_an_optimizer(kv_type, tmp_path):
    """Saving or loading states without set_optimizer raises MXNetError."""
    store = kv.create(kv_type)
    with pytest.raises(mx.MXNetError, match="no optimizer"):
        store.save_optimizer_states(str(tmp_path / "x"))
    with pytest.raises(mx.MXNetError, match="must be callable"):
        store._set_updater(3)


# -- create, registry, properties ------------------------------------------------------------------

def test_create_and_properties():
    """Names are lower-cased; MXNet's substring rule maps legacy names; single-process ranks."""
    assert kv.create().type == "local"
    assert isinstance(kv.create("Device"), kv.DeviceKVStore)
    legacy = kv.create("local_allreduce_device")
    assert isinstance(legacy, kv.DeviceKVStore) and legacy.type == "local_allreduce_device"
    assert isinstance(kv.create("local_update_cpu"), kv.LocalKVStore)
    store = kv.create("local")
    assert (store.rank, store.num_workers) == (0, 1)
    store._barrier()
    store.barrier()
    with pytest.raises(mx.MXNetError, match="no distributed kvstore type 'dist_unknown'"):
        kv.create("dist_unknown")
    with pytest.raises(mx.MXNetError, match="name must be a string"):
        kv.create(3)
    with pytest.raises(mx.MXNetError, match="Unknown capability: foo"):
        store.is_capable("foo")


def test_register_a_new_type():
    """A new store type is one registered class; create finds it by its registry name."""
    @kv.KVStore.register
    class EchoStore(kv.LocalKVStore):
        registry_names = ("echo_test",)

    try:
        store = kv.create("ECHO_TEST")
        assert type(store) is EchoStore and store.type == "echo_test"
        assert kv.KVStoreBase is kv.KVStore
        with pytest.raises(mx.MXNetError, match="expected a KVStore subclass"):
            kv.KVStore.register(int)
    finally:
        kv.KVStore.kv_registry.pop("echo_test")


def test_gradient_compression_only_for_device_types():
    """As MXNet: compression is refused for 'local', accepted for 'device' (and 'dist')."""
    with pytest.raises(mx.MXNetError, match="not supported for this type of kvstore"):
        kv.create("local").set_gradient_compression({"type": "2bit", "threshold": 0.5})
    store = kv.create("device")
    store.set_gradient_compression({"type": "2bit"})
    assert store._compression.threshold == 0.5
    with pytest.raises(mx.MXNetError, match="Unknown type for gradient compression 1bit"):
        store.set_gradient_compression({"type": "1bit"})
