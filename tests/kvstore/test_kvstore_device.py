"""The ``device`` store: greedy bin-packing placement of merge buffers, ``describe_placement``,
reduce and update on the placed device, and the same numbers as ``local``.
"""
import numpy as np

import mxref as mx
from mxref import kvstore as kv

CTXS = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]


def _init(store, sizes):
    for k, n in enumerate(sizes):
        store.init(k, mx.nd.zeros((n,)))


def test_placement_is_greedy_bin_packing(any_engine):
    """Largest key first onto the least-loaded device: loads end up balanced, not all on cpu(0)."""
    sizes = [10, 400, 30, 200, 100, 300, 50, 250]
    store = kv.create("device")
    _init(store, sizes)
    assert store.describe_placement() == {}
    store.push(0, [mx.nd.ones((10,), ctx=c) for c in CTXS])
    report = store.describe_placement()
    assert list(report) == ["cpu(0)", "cpu(1)", "cpu(2)"]
    # by hand: 400->0, 300->1, 250->2, 200->2 (450), 100->1 (400), 50->0 (450), 30->1, 10->1
    assert report["cpu(0)"] == {"bytes": 4 * 450, "keys": [1, 6]}
    assert report["cpu(1)"] == {"bytes": 4 * 440, "keys": [0, 2, 4, 5]}
    assert report["cpu(2)"] == {"bytes": 4 * 450, "keys": [3, 7]}
    loads = [r["bytes"] for r in report.values()]
    assert max(loads) - min(loads) <= 4 * max(sizes)
    for key, ctx in enumerate([1, 0, 1, 2, 1, 1, 0, 2]):
        assert store._store[key].context == CTXS[ctx]


def test_late_keys_go_to_the_least_loaded_device(any_engine):
    """A key inited after the first push is placed at its first push, onto the lightest device."""
    store = kv.create("device")
    _init(store, [100, 60])
    store.push(0, [mx.nd.ones((100,), ctx=c) for c in CTXS[:2]])
    store.init(2, mx.nd.zeros((30,)))
    store.push(2, mx.nd.ones((30,)))
    report = store.describe_placement()
    assert report["cpu(0)"]["keys"] == [0] and report["cpu(1)"]["keys"] == [1, 2]
    assert report["cpu(1)"]["bytes"] == 4 * 90


def test_reduce_and_update_run_on_the_placed_device(any_engine):
    """The updater sees the merged sum and the stored weight on the key's device."""
    store = kv.create("device")
    seen = {}

    def update(key, merged, stored):
        seen[key] = (merged.context, stored.context)
        stored[:] = stored - merged * 0.5

    store._set_updater(update)
    _init(store, [8, 16])
    store.push([0, 1], [[mx.nd.ones((8,), ctx=c) for c in CTXS[:2]],
                        [mx.nd.ones((16,), ctx=c) for c in CTXS[:2]]])
    outs = [mx.nd.zeros((8,), ctx=c) for c in CTXS]
    store.pull(0, out=outs)
    assert seen == {1: (mx.cpu(0), mx.cpu(0)), 0: (mx.cpu(1), mx.cpu(1))}
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full(8, -1.0, np.float32))


def test_device_and_local_give_the_same_numbers(any_engine):
    """Pushing the same values with an optimizer, device and local stores agree exactly."""
    rng = np.random.default_rng(3)
    grads = rng.standard_normal((3, 2, 5, 4)).astype(np.float32)
    results = []
    for kind in ("local", "device"):
        store = kv.create(kind)
        store.set_optimizer(mx.optimizer.Adam(learning_rate=0.01))
        store.init("w", mx.nd.ones((5, 4)))
        out = mx.nd.zeros((5, 4), ctx=mx.cpu(1))
        for step in grads:
            store.push("w", [mx.nd.array(g, ctx=mx.cpu(d)) for d, g in enumerate(step)])
            store.pull("w", out=out)
        results.append(out.asnumpy())
    np.testing.assert_array_equal(results[0], results[1])
