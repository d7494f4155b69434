"""Updater: lazy state creation, list calls, states saved and loaded (data-only), contexts."""
import numpy as np
import pytest

import mxref as mx
from mxref import optimizer as opt


def _train(updater, weights, grads):
    for g in grads:
        for i, w in weights.items():
            updater(i, mx.nd.array(g * (i + 1), dtype=w.dtype), w)


@pytest.mark.parametrize("name,kw", [("sgd", dict(momentum=0.9)), ("adam", {}),
                                     ("rmsprop", dict(centered=True)), ("ftrl", {}),
                                     ("sgd", dict(momentum=0.9, multi_precision=True))])
def test_save_load_states_resumes_exactly(name, kw):
    """Training 3 steps, saving states (get_states), then 3 more in a fresh Updater after
    set_states equals 6 uninterrupted steps."""
    rng = np.random.default_rng(5)
    grads = [rng.uniform(-1, 1, (2, 3)) for _ in range(6)]
    dtype = "float16" if kw.get("multi_precision") else "float32"
    w0 = rng.uniform(-1, 1, (2, 3))
    full = {i: mx.nd.array(w0, dtype=dtype) for i in range(2)}
    u_full = opt.get_updater(opt.create(name, **kw))
    _train(u_full, full, grads)

    part = {i: mx.nd.array(w0, dtype=dtype) for i in range(2)}
    u1 = opt.get_updater(opt.create(name, **kw))
    _train(u1, part, grads[:3])
    blob = u1.get_states(dump_optimizer=True)
    u2 = opt.get_updater(opt.create(name, learning_rate=123.0))   # replaced by the dumped optimizer
    u2.set_states(blob)
    assert all(v is False for v in u2.states_synced.values())
    _train(u2, part, grads[3:])
    for i in range(2):
        np.testing.assert_array_equal(part[i].asnumpy(), full[i].asnumpy())
    assert u2.optimizer.num_update == 6


def test_states_only_keeps_current_optimizer():
    """get_states() without the optimizer saves the state dict alone; set_states keeps ours."""
    u = opt.get_updater(opt.SGD(momentum=0.5, learning_rate=0.1))
    w = mx.nd.array([1.0, 2.0])
    u(0, mx.nd.array([1.0, 1.0]), w)
    states, _ = opt.states_format.loads(u.get_states())
    assert set(states) == {0}
    np.testing.assert_allclose(states[0].asnumpy(), [-0.1, -0.1], rtol=1e-6)
    other = opt.SGD(momentum=0.5, learning_rate=0.2)
    u2 = opt.get_updater(other)
    u2.set_states(u.get_states())
    assert u2.optimizer is other
    np.testing.assert_allclose(u2.states[0].asnumpy(), [-0.1, -0.1], rtol=1e-6)


def test_list_call_and_bytes_keys():
    """An updater accepts lists of indices/grads/weights; bytes keys are decoded to str."""
    u = opt.get_updater(opt.SGD(learning_rate=0.5))
    ws = [mx.nd.array([1.0]), mx.nd.array([2.0])]
    u([b"a", "b"], [mx.nd.array([1.0]), mx.nd.array([2.0])], ws)
    assert [w.asnumpy()[0] for w in ws] == [0.5, 1.0]
    assert set(u.states) == {"a", "b"}


def test_states_created_once_per_index():
    """create_state runs at the first update of an index only."""
    calls = []

    class Counting(opt.SGD):
        def create_state(self, index, weight):
            calls.append(index)
            return super().create_state(index, weight)

    u = opt.get_updater(Counting(momentum=0.9))
    w = mx.nd.array([1.0])
    for _ in range(3):
        u(7, mx.nd.array([1.0]), w)
    assert calls == [7]


def test_sync_state_context_moves_nested_states():
    """sync_state_context keeps tuple/list structure and moves every array to the context."""
    u = opt.get_updater(opt.SGD())
    a, b = mx.nd.array([1.0]), mx.nd.array([2.0])
    out = u.sync_state_context((a, [b, None]), mx.cpu(1))
    assert isinstance(out, tuple) and isinstance(out[1], list) and out[1][1] is None
    assert out[0].context == mx.cpu(1) and out[1][0].context == mx.cpu(1)
    np.testing.assert_array_equal(out[1][0].asnumpy(), [2.0])
