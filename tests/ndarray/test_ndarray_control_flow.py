"""mx.nd.contrib.foreach / while_loop / cond: Python loops over NDArrays, recorded by autograd."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd

RNG = np.random.RandomState(3)


def test_foreach_stacks_outputs_and_returns_states_as_given():
    data = mx.nd.array(RNG.uniform(size=(4, 2, 3)))
    h0 = mx.nd.zeros((2, 3))
    out, states = mx.nd.contrib.foreach(lambda x, s: (x + s[0], [s[0] + x]), data, [h0])
    assert isinstance(out, mx.nd.NDArray) and out.shape == (4, 2, 3)
    assert isinstance(states, list) and states[0].shape == (2, 3)
    np.testing.assert_allclose(out.asnumpy(), np.cumsum(data.asnumpy(), axis=0), rtol=1e-6)
    outs, state = mx.nd.contrib.foreach(lambda xs, s: ([xs[0], xs[1] * 2], s), [data, data], h0)
    assert isinstance(outs, list) and len(outs) == 2 and isinstance(state, mx.nd.NDArray)


def test_foreach_gradient_under_record():
    """Every op of the body lands on the tape: d/dw of sum_t out_t for out_t = x_t * w + h_t."""
    x = mx.nd.array(RNG.uniform(size=(3, 2)))
    w, h0 = mx.nd.array([0.5, -1.0]), mx.nd.array([1.0, 2.0])
    for a in (x, w, h0):
        a.attach_grad()
    with autograd.record():
        out, states = mx.nd.contrib.foreach(lambda d, s: (d * w + s[0], [s[0] * 0.5 + d]), x, [h0])
        loss = out.sum() + states[0].sum()
    loss.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), x.asnumpy().sum(axis=0), rtol=1e-6)
    # h_t = 0.5^t h0 + ...; d/dh0 = sum_t 0.5^t + 0.5^3
    np.testing.assert_allclose(h0.grad.asnumpy(), [1 + 0.5 + 0.25 + 0.125] * 2, rtol=1e-6)


def test_foreach_agrees_with_the_symbolic_loop():
    def body(x, s):
        out = mx.nd.tanh(x + s[0]) if isinstance(x, mx.nd.NDArray) else mx.sym.tanh(x + s[0])
        return out, [out * 2]
    data, h = RNG.uniform(size=(3, 2)), RNG.uniform(size=(2,))
    imp, imp_states = mx.nd.contrib.foreach(body, mx.nd.array(data), [mx.nd.array(h)])
    sym_out, sym_states = mx.sym.contrib.foreach(body, mx.sym.var("d"), [mx.sym.var("h")])
    res = mx.sym.Group([sym_out] + sym_states).eval(d=mx.nd.array(data), h=mx.nd.array(h))
    np.testing.assert_allclose(res[0].asnumpy(), imp.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(res[1].asnumpy(), imp_states[0].asnumpy(), rtol=1e-6)


def test_while_loop_pads_to_max_iterations():
    outs, (i, s) = mx.nd.contrib.while_loop(
        lambda i, s: i < 3, lambda i, s: ([s * 2], [i + 1, s + 1]),
        [mx.nd.array([0]), mx.nd.array([1.0])], max_iterations=5)
    assert outs[0].shape == (5, 1)
    np.testing.assert_allclose(outs[0].asnumpy().ravel(), [2, 4, 6, 0, 0])
    assert i.asscalar() == 3 and s.asscalar() == 4


def test_while_loop_with_no_step_and_a_single_loop_var():
    outs, v = mx.nd.contrib.while_loop(lambda v: v > 10, lambda v: (v, v + 1), mx.nd.array([1.0]),
                                       max_iterations=3)
    assert outs == [] and isinstance(v, mx.nd.NDArray) and v.asscalar() == 1


def test_while_loop_gradient_under_record():
    s, b = mx.nd.array([1.0, 2.0]), mx.nd.array([0.5, 1.0])
    s.attach_grad()
    b.attach_grad()
    with autograd.record():
        outs, final = mx.nd.contrib.while_loop(
            lambda i, s: i < 4, lambda i, s: (s * 2, [i + 1, s + b]),
            [mx.nd.array([0]), s], max_iterations=6)
        loss = outs.sum() + final[1].sum()
    loss.backward()
    np.testing.assert_allclose(s.grad.asnumpy(), [2 * 4 + 1] * 2)
    np.testing.assert_allclose(b.grad.asnumpy(), [2 * (0 + 1 + 2 + 3) + 4] * 2)


def test_while_loop_bad_input():
    with pytest.raises(ValueError, match="max_iterations should be specified"):
        mx.nd.contrib.while_loop(lambda v: v < 1, lambda v: (v, v), [mx.nd.zeros((1,))])
    with pytest.raises(ValueError, match="at least one element"):
        mx.nd.contrib.while_loop(lambda: 1, lambda: ([], []), [], max_iterations=2)
    with pytest.raises(ValueError, match="length of loop_vars"):
        mx.nd.contrib.while_loop(lambda v: v < 1, lambda v: (v, [v, v]), [mx.nd.zeros((1,))],
                                 max_iterations=2)


def test_cond_picks_a_branch_and_differentiates_it():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.contrib.cond(x.sum() > 0, lambda: x * x, lambda: x * 3)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), [1, 4])
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4])
    assert mx.nd.contrib.cond(mx.nd.array([0]), lambda: 1, lambda: 2) == 2


def test_foreach_bad_input_is_named():
    with pytest.raises(mx.MXNetError, match="foreach input must be a .*list of NDArray"):
        mx.nd.contrib.foreach(lambda x, s: (x, s), [np.zeros(3)], [])
    with pytest.raises(mx.MXNetError, match="foreach states must be a .*list of NDArray"):
        mx.nd.contrib.foreach(lambda x, s: (x, s), mx.nd.zeros((2,)), [3])
