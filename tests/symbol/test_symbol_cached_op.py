"""mx.nd.CachedOp: a symbol called on NDArrays, cached per signature, recorded by autograd
(mxref/symbol/cached_op.py)."""
import numpy as np
import pytest

import mxref as mx


def _net():
    return mx.sym.FullyConnected(mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b"), num_hidden=2) * 2


def test_call_matches_numpy_and_reuses_the_executor():
    op = mx.nd.CachedOp(_net())
    x, w, b = mx.nd.array([[1.0, 2.0, 3.0]]), mx.nd.ones((2, 3)), mx.nd.array([0.5, -1.0])
    o1 = op(x, w, b)
    np.testing.assert_allclose(o1.asnumpy(), 2 * (x.asnumpy() @ w.asnumpy().T + b.asnumpy()))
    b[:] = 0
    o2 = op(x, w, b)
    assert len(op._executors) == 1
    np.testing.assert_allclose(o2.asnumpy(), 2 * (x.asnumpy() @ w.asnumpy().T))
    assert o1.asnumpy()[0, 0] != o2.asnumpy()[0, 0]        # outputs are the caller's, not reused
    dst = mx.nd.zeros((1, 2))
    assert op(x, w, b, out=dst) is dst
    np.testing.assert_allclose(dst.asnumpy(), o2.asnumpy())
    with pytest.raises(mx.MXNetError, match="expected 3 inputs"):
        op(x, w)


def test_recorded_call_gives_gradients_to_every_input():
    op = mx.nd.CachedOp(_net())
    x, w, b = mx.nd.array([[1.0, 2.0, 3.0]]), mx.nd.ones((2, 3)), mx.nd.zeros(2)
    for a in (x, w, b):
        a.attach_grad()
    with mx.autograd.record():
        o = op(x, w, b) * 3
    o.backward(retain_graph=True)
    np.testing.assert_allclose(w.grad.asnumpy(), np.full((2, 1), 6.0) @ x.asnumpy())
    np.testing.assert_allclose(x.grad.asnumpy(), np.full((1, 2), 6.0) @ w.asnumpy())
    o.backward()
    np.testing.assert_allclose(b.grad.asnumpy(), [6.0, 6.0])


def test_several_outputs_are_a_list():
    op = mx.nd.CachedOp(mx.sym.split(mx.sym.var("x"), num_outputs=2))
    parts = op(mx.nd.array([[1, 2], [3, 4]]))
    assert isinstance(parts, list) and [p.shape for p in parts] == [(2, 1), (2, 1)]
