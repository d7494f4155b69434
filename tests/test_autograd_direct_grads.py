"""The tuned backward's outputs (``autograd._invoke_into``): a variable's gradient written by its
backward op straight into ``.grad`` (no copy afterwards), an unread output of
``_backward_FullyConnected`` given req 'null' (not computed), and the cases that keep the copy.
Every result is compared bit for bit with the plain backward (``autograd_plain``)."""
import collections

import numpy as np
import pytest

import mxref as mx
from mxref import autograd as ag
from mxref import nd
from mxref.ndarray import imperative
from mxref.ops import registry

pytestmark = pytest.mark.usefixtures("tuned_paths")


def _pushed(fn):
    """``fn()``'s result and the engine operations it pushed, by name."""
    eng = mx.engine.get()
    names = collections.Counter()
    original = eng.push_sync

    def counting(f, ctx, const_vars=(), mutable_vars=(), *args, **kwargs):
        names[kwargs.get("name") or (args[2] if len(args) > 2 else None)] += 1
        return original(f, ctx, const_vars, mutable_vars, *args, **kwargs)

    eng.push_sync = counting
    try:
        out = fn()
        mx.nd.waitall()
    finally:
        del eng.push_sync
    return out, names


def _mlp(seed, batch=6, sizes=(5, 7, 3)):
    """Weights and biases (with gradients) of a small MLP, and its input (without)."""
    rng = np.random.RandomState(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        for shape in ((n_out, n_in), (n_out,)):
            p = nd.array(rng.randn(*shape).astype(np.float32))
            p.attach_grad()
            params.append(p)
    return params, nd.array(rng.randn(batch, sizes[0]).astype(np.float32))


def _mlp_backward(params, x):
    with ag.record():
        h = x
        for i in range(0, len(params), 2):
            h = nd.FullyConnected(h, params[i], params[i + 1], num_hidden=params[i].shape[0])
            if i + 2 < len(params):
                h = nd.relu(h)
        loss = nd.softmax_cross_entropy(h, nd.array([0, 1, 2, 0, 1, 2][:h.shape[0]]))
    loss.backward()
    return [p.grad.asnumpy() for p in params]


def _plain(fn):
    with imperative.plain_paths(True):
        return fn()


def test_gradients_land_in_grad_without_copies():
    params, x = _mlp(0)
    buffers = [p.grad for p in params]
    grads, names = _pushed(lambda: _mlp_backward(params, x))
    assert names["_copy"] == 0          # each gradient was written by its backward op
    assert all(a is p.grad for a, p in zip(buffers, params))
    expect = _plain(lambda: _mlp_backward(*_mlp(0)))
    for g, e in zip(grads, expect):
        np.testing.assert_array_equal(g, e)


def test_replayed_step_matches_plain_every_time():
    params, x = _mlp(1)
    plain_params, plain_x = _mlp(1)
    for _ in range(3):
        grads = _mlp_backward(params, x)
        expect = _plain(lambda: _mlp_backward(plain_params, plain_x))
        for g, e in zip(grads, expect):
            np.testing.assert_array_equal(g, e)
        for p in params + plain_params:    # a step of SGD on both
            p[:] = p - 0.1 * p.grad


def test_unread_data_gradient_gets_req_null(monkeypatch):
    """The first layer's data gradient, which nothing reads, is not computed."""
    op = registry.get("_backward_FullyConnected")
    reqs = []
    kernel = op.fcompute

    def recording(octx, params, inputs, outputs, req):
        reqs.append((inputs[1].shape, tuple(req)))
        kernel(octx, params, inputs, outputs, req)

    monkeypatch.setattr(op, "fcompute", recording)
    monkeypatch.setattr(ag, "_out_specs", {})
    # Shapes no other test uses: the op's cached kernel (per shape) is the recording one.
    params, x = _mlp(2, batch=5, sizes=(11, 13, 3))
    grads = _mlp_backward(params, x)
    by_data_shape = dict(reqs)
    assert by_data_shape[(5, 11)] == ("null", "write", "write")      # the first layer
    assert by_data_shape[(5, 13)] == ("write", "write", "write")
    expect = _plain(lambda: _mlp_backward(*_mlp(2, batch=5, sizes=(11, 13, 3))))
    for g, e in zip(grads, expect):
        np.testing.assert_array_equal(g, e)


def test_data_gradient_is_computed_when_the_input_needs_one():
    params, x = _mlp(3)
    x.attach_grad()
    _mlp_backward(params, x)
    px, pparams = _mlp(3)[1], _mlp(3)[0]

    def plain():
        px.attach_grad()
        _mlp_backward(pparams, px)
        return px.grad.asnumpy()

    np.testing.assert_array_equal(x.grad.asnumpy(), _plain(plain))


def _head_grad_is_own_grad():
    x = nd.array(np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    x.attach_grad()
    x.grad[:] = 3.0
    with ag.record():
        y = nd.FullyConnected(x, nd.ones((3, 3)), no_bias=True, num_hidden=3) * 2
    y.backward(x.grad)            # the head gradient is read from the buffer being written
    return x.grad.asnumpy()


def _recorded_value_is_own_grad():
    x = nd.array(np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    x.attach_grad()
    x.grad[:] = 0.5
    with ag.record():
        y = (x * x.grad * x).sum()    # x.grad is a forward value the backward reads
    y.backward()
    return x.grad.asnumpy()


def _shared_buffer():
    a, b = nd.array([1.0, 2.0]), nd.array([3.0, 4.0])
    g = nd.zeros((2,))
    ag.mark_variables([a, b], [g, g])
    with ag.record():
        y = (a * 2 + b * 5).sum()
    y.backward()
    return g.asnumpy()


def _add_req():
    params, x = _mlp(4)
    for p in params:
        p.attach_grad("add")
    _mlp_backward(params, x)
    return [g for g in _mlp_backward(params, x)]


@pytest.mark.parametrize("case", [_head_grad_is_own_grad, _recorded_value_is_own_grad, _shared_buffer,
                                  _add_req])
def test_buffers_read_or_shared_keep_plain_results(case):
    """A buffer the backward reads, or two variables share, keeps the plain path's result."""
    got, expect = case(), _plain(case)
    if not isinstance(got, list):
        got, expect = [got], [expect]
    for g, e in zip(got, expect):
        np.testing.assert_array_equal(g, e)


def test_grad_function_returns_new_arrays():
    """``autograd.grad`` writes no ``.grad``: its results are arrays of their own."""
    params, x = _mlp(5)
    before = [p.grad.asnumpy().copy() for p in params]
    with ag.record():
        y = nd.FullyConnected(x, params[0], params[1], num_hidden=7).sum()
    dw, db = ag.grad(y, params[:2])
    assert dw is not params[0].grad and db is not params[1].grad
    np.testing.assert_array_equal(params[0].grad.asnumpy(), before[0])
    np.testing.assert_array_equal(db.asnumpy(), np.full(7, 6.0, np.float32))


def test_wrong_shaped_grad_buffer_still_raises():
    x = nd.ones((2, 3))
    ag.mark_variables([x], [nd.zeros((3, 2))])
    with ag.record():
        y = nd.FullyConnected(x, nd.ones((4, 3)), no_bias=True, num_hidden=4)
    with pytest.raises(mx.MXNetError, match="gradient has shape"):
        y.backward()
