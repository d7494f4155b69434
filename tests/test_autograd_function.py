"""autograd.Function (custom Python gradients) and higher-order gradients with grad(create_graph=True)."""
import gc
import weakref

import numpy as np
import pytest

import mxref as mx
from mxref import autograd as ag
from mxref import nd


class Sigmoid(ag.Function):
    def forward(self, x):
        y = 1 / (1 + nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        (y,) = self.saved_tensors
        return dy * y * (1 - y)


class MulAdd(ag.Function):
    """Two inputs, two outputs: (a*b, a+b)."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b, a + b

    def backward(self, d_prod, d_sum):
        a, b = self.saved_tensors
        return d_prod * b + d_sum, d_prod * a + d_sum


class StraightThrough(ag.Function):
    """sign(x) forward, identity backward: the gradient is the user's, not the true one (zero)."""

    def forward(self, x):
        return nd.sign(x)

    def backward(self, dy):
        return dy * 1


class Cube(ag.Function):
    def forward(self, x):
        self.save_for_backward(x)
        return x * x * x

    def backward(self, dy):
        (x,) = self.saved_tensors
        return dy * 3 * x * x


def _var(values):
    x = nd.array(values)
    x.attach_grad()
    return x


def test_function_gradient_matches_closed_form():
    """A Function's backward gives sigmoid' = y(1-y) (MXNet 1.9.1: [0.25, 0.19661193])."""
    x = _var([0.0, 1.0])
    with ag.record():
        y = Sigmoid()(x)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [0.25, 0.19661193], rtol=1e-6)


def test_function_inside_a_larger_graph_uses_the_chain_rule():
    """Ops before and after a Function are differentiated through it."""
    x = _var([0.5, -1.0])
    with ag.record():
        y = nd.sum(Sigmoid()(x * 2) * 3)
    y.backward()
    s = 1 / (1 + np.exp(-2 * np.array([0.5, -1.0])))
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * s * (1 - s) * 2, rtol=1e-6)


def test_function_with_two_inputs_and_outputs_and_an_unused_output():
    """Each output's gradient reaches backward; an output the heads do not use gets zeros."""
    a, b = _var([1.0, 2.0]), _var([3.0, 4.0])
    with ag.record():
        prod, total = MulAdd()(a, b)
    ag.backward([prod, total], [nd.array([1.0, 1.0]), nd.array([10.0, 10.0])])
    np.testing.assert_allclose(a.grad.asnumpy(), [13, 14])
    np.testing.assert_allclose(b.grad.asnumpy(), [11, 12])
    with ag.record():
        prod, _ = MulAdd()(a, b)
    prod.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), [3, 4])
    np.testing.assert_allclose(b.grad.asnumpy(), [1, 2])


def test_function_gradient_is_the_users_not_the_true_one():
    """A straight-through estimator passes gradients through sign()."""
    x = _var([-2.0, 0.5])
    with ag.record():
        y = StraightThrough()(x) * 5
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [5, 5])


def test_function_outside_record_just_runs_forward():
    """Without recording a Function is a plain call; its outputs are in no graph."""
    y = Sigmoid()(nd.array([0.0]))
    assert y._ag is None and y.asnumpy().tolist() == [0.5]


def test_function_instance_is_single_use_and_backward_is_checked():
    """Calling an instance twice, or returning the wrong number/shape of gradients, raises."""
    f, x = Sigmoid(), _var([1.0, 2.0])
    with ag.record():
        f(x)
        with pytest.raises(mx.MXNetError, match="only be called once"):
            f(x)

    class TooMany(Sigmoid):
        def backward(self, dy):
            return dy, dy

    class WrongShape(Sigmoid):
        def backward(self, dy):
            return nd.ones((3,))

    for bad, msg in ((TooMany, "returned 2 gradients for 1 inputs"), (WrongShape, r"has shape \(3,\)")):
        with ag.record():
            y = bad()(x)
        with pytest.raises(mx.MXNetError, match=msg):
            y.backward()


def test_function_and_its_saved_tensors_are_freed_by_backward():
    """The Function object (and what it saved) lives on the graph and goes when backward frees it."""
    x = _var([1.0, 2.0])
    f = Sigmoid()
    with ag.record():
        y = f(x)
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is not None
    y.backward()
    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------------------------------------
# Higher order: grad(create_graph=True), then backward through the recorded gradient
# ---------------------------------------------------------------------------------------------

def test_second_derivative_through_a_function():
    """d2/dx2 x^3 = 6x: the Function's backward ops are recorded under create_graph."""
    x = _var([1.0, 2.0, -1.5])
    with ag.record():
        y = Cube()(x)
        (dy,) = ag.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(dy.asnumpy(), [3, 12, 6.75])
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6, 12, -9])


def test_second_derivative_of_sin():
    """sin'' = -sin through _backward_sin's gradient (MXNet 1.9.1 gives the same)."""
    values = np.array([1.0, 2.0, -0.5])
    x = _var(values)
    with ag.record():
        y = nd.sin(x)
        (dy,) = ag.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(dy.asnumpy(), np.cos(values), rtol=1e-6)
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), -np.sin(values), rtol=1e-6)


def test_mixed_second_derivative_through_head_gradient():
    """grad(sin(x), head_grads=w) = w*cos(x) is recorded in w too: d/dw sum(w*cos(x)) = cos(x)."""
    values = np.array([0.3, 1.2])
    x, w = _var(values), _var([2.0, -1.0])
    with ag.record():
        (dx,) = ag.grad(nd.sin(x), [x], head_grads=w, create_graph=True)
        total = nd.sum(dx)
    np.testing.assert_allclose(dx.asnumpy(), [2, -1] * np.cos(values), rtol=1e-6)
    total.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), np.cos(values), rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), -np.array([2, -1]) * np.sin(values), rtol=1e-6)


def test_second_derivative_through_intermediate_values():
    """d2/dx2 sin(2x) = -4 sin(2x) reads the recorded 2x; with retain_graph=False that value is
    freed by the first pass, so differentiating again raises."""
    values = np.array([0.4, -1.1])
    x = _var(values)
    with ag.record():
        (dy,) = ag.grad(nd.sin(x * 2), [x], create_graph=True)
    np.testing.assert_allclose(dy.asnumpy(), 2 * np.cos(2 * values), rtol=1e-6)
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), -4 * np.sin(2 * values), rtol=1e-5)
    with ag.record():
        (dy,) = ag.grad(nd.sin(x * 2), [x], create_graph=True, retain_graph=False)
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        dy.backward()
