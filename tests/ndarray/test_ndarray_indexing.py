"""Slice assignment (NDArray.__setitem__): single elements from one-element arrays, and under
autograd: recorded as _slice_assign when the value is in a graph (its gradient is the region of the
head gradient, summed over broadcast axes), refused as in MXNet when the target is in a graph."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd as ag
from mxref import nd


def _var(values):
    x = nd.array(values)
    x.attach_grad()
    return x


def test_element_from_a_one_element_array(any_engine):
    """a[i] = nd.array([v]) and a[i, j] = nd.array([[v]]) set one element (numpy alone refuses)."""
    a = nd.zeros((4,))
    a[1] = nd.array([5.0])
    a[-1] = nd.array([[7.0]])
    assert a.asnumpy().tolist() == [0, 5, 0, 7]
    b = nd.zeros((2, 3))
    b[1, 2] = nd.array([3.0])
    assert b.asnumpy()[1].tolist() == [0, 0, 3]


def test_assigned_value_gets_the_region_of_the_gradient():
    """t = zeros; t[1] = w records _slice_assign: dL/dw = the head gradient's row 1."""
    w = _var([1.0, 2.0, 3.0, 4.0])
    weights = np.arange(12.0).reshape(3, 4)
    with ag.record():
        t = nd.zeros((3, 4))
        t[1] = w * 2
        loss = nd.sum(t * nd.array(weights))
    assert t.asnumpy()[1].tolist() == [2, 4, 6, 8] and not t.asnumpy()[[0, 2]].any()
    loss.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), 2 * weights[1])


def test_broadcast_and_int_index_values_sum_their_gradient_back():
    """A value broadcast over the region gets the region's gradient summed over the broadcast axes;
    an element set from a (1,) slice gets that element's gradient."""
    x = _var([10.0, 20.0])
    weights = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with ag.record():
        t = nd.zeros((2, 3))
        t[:, 1:3] = x                      # (2,) broadcast to (2, 2): each row gets x
        loss = nd.sum(t * nd.array(weights))
    np.testing.assert_array_equal(t.asnumpy(), [[0, 10, 20], [0, 10, 20]])
    loss.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), weights[:, 1:].sum(axis=0))
    with ag.record():
        u = nd.zeros((4,))
        u[2] = x[1:2]
        loss = nd.sum(u * nd.array([1.0, 2.0, 3.0, 4.0]))
    assert u.asnumpy().tolist() == [0, 0, 20, 0]
    loss.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [0, 3])


def test_functional_slice_assign_zeroes_the_overwritten_part():
    """_slice_assign(lhs, rhs): lhs's gradient is zero over the region, rhs gets the region."""
    w, x = _var([1.0, 2.0, 3.0, 4.0]), _var([10.0, 20.0])
    c = nd.array([1.0, 2.0, 3.0, 4.0])
    with ag.record():
        y = nd._internal._slice_assign(w * 1, x * 2, begin=(1,), end=(3,))
        loss = nd.sum(y * c)
    assert y.asnumpy().tolist() == [1, 20, 40, 4]
    loss.backward()
    assert w.grad.asnumpy().tolist() == [1, 0, 0, 4]
    assert x.grad.asnumpy().tolist() == [4, 6]


@pytest.mark.parametrize("value", [nd.array([7.0, 8.0]), 5.0, np.array([1.0, 2.0])],
                         ids=["ndarray", "scalar", "numpy"])
def test_assigning_into_a_recorded_array_raises_as_mxnet(value):
    """y = w * 1; y[1:3] = v inside record() raises MXNet's error instead of a wrong gradient
    (y's old value may be saved for backward); after the record section it is allowed."""
    w = _var([1.0, 2.0, 3.0, 4.0])
    with ag.record():
        y = w * 1
        with pytest.raises(mx.MXNetError, match="already in a computational graph"):
            y[1:3] = value
    y[1:3] = value
    assert y.asnumpy()[0] == 1


def test_fancy_index_with_a_recorded_value_raises():
    """Only int/slice keys map to _slice_assign; a list index with a recorded value is refused."""
    x = _var([1.0, 2.0])
    with ag.record():
        t = nd.zeros((4,))
        with pytest.raises(mx.MXNetError, match="cannot be recorded"):
            t[[0, 2]] = x * 1


def test_pause_and_plain_arrays_are_not_recorded():
    """Inside pause(), or with nothing in a graph, assignment is the plain engine write."""
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * 3
        with ag.pause():
            t = nd.zeros((2,))
            t[:] = y
        plain = nd.zeros((2,))
        plain[0] = 4
    assert t._ag is None and plain._ag is None
    assert t.asnumpy().tolist() == [3, 6] and plain.asnumpy().tolist() == [4, 0]


def test_copyto_is_recorded():
    """x.copyto(y) inside record() carries the gradient to x (as MXNet 1.9.1: 3 per element)."""
    x = _var([10.0, 20.0])
    with ag.record():
        y = nd.zeros((2,))
        x.copyto(y)
        loss = nd.sum(y * 3)
    loss.backward()
    assert x.grad.asnumpy().tolist() == [3, 3]


def test_contiguous_basic_slices_are_views():
    """A tuple of slices whose result is one contiguous block is a view (writes go through, as in
    MXNet); the contiguity rule agrees with numpy's flags; others copy."""
    import itertools

    import mxref as mx
    shape = (3, 4, 5)
    base = np.arange(60).reshape(shape)
    slices = [slice(None), slice(1, 3), slice(2, 3), slice(None, None, 2), slice(None, None, -1), slice(4, 0)]
    is_contig = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    for key in itertools.product(slices, repeat=3):
        assert is_contig(key, shape) == base[key].flags.contiguous, key
    x = mx.nd.array(base)
    v = x[1:2, 1:3]
    assert v._chunk is x._chunk and v.shape == (1, 2, 5)
    v[:] = -1
    expect = base.copy()
    expect[1:2, 1:3] = -1
    np.testing.assert_array_equal(x.asnumpy(), expect)
    c = x[:, 1:3]                     # not contiguous: a copy
    assert c._chunk is not x._chunk
    np.testing.assert_array_equal(c.asnumpy(), expect[:, 1:3])


def test_contiguous_slice_view_records_its_gradient():
    import mxref as mx
    x = mx.nd.array(np.arange(24).reshape(2, 3, 4))
    x.attach_grad()
    with mx.autograd.record():
        y = x[1:2, 0:2] * 2
    y.backward()
    want = np.zeros((2, 3, 4))
    want[1:2, 0:2] = 2
    np.testing.assert_array_equal(x.grad.asnumpy(), want)


def test_assign_size_one_array_to_an_element():
    """b[0] = np.array([v]) and b[0] = v both store v (MXNet issue 8668)."""
    import mxref as mx
    a = np.array([47.844944], dtype=np.float32)
    b = mx.nd.zeros(1)
    b[0] = a
    np.testing.assert_array_equal(b.asnumpy(), a)
    c = mx.nd.zeros((2, 2))
    c[1, 1] = np.array([[3.0]])
    assert c.asnumpy()[1, 1] == 3.0


def test_copying_getitem_is_recorded():
    """x[key] for keys that copy (int tuples, steps, index arrays) is recorded while autograd
    records x: the gradient scatters back, repeated positions summed."""
    import mxref as mx
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    for key in [(1, 2), (slice(None), slice(None, None, 2)), ([0, 0, 2],), (np.array([2, 0]), slice(1, 3))]:
        x = mx.nd.array(base)
        x.attach_grad()
        with mx.autograd.record():
            y = x[key]
        y.backward()
        np.testing.assert_array_equal(y.asnumpy(), base[key].reshape(y.shape))
        want = np.zeros_like(base)
        np.add.at(want, key, 1)
        np.testing.assert_array_equal(x.grad.asnumpy(), want)
