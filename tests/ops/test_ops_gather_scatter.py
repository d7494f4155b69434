"""gather_nd / scatter_nd / _scatter_set_nd and ravel / unravel / batch_take / fill_element_0index:
MXNet 1.9.1's documented and observed values, index rules, gradients, symbols and errors."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

import mxref as mx
from mxref.base import MXNetError

D = np.array([[0, 1], [2, 3]], np.float32)
IDX = np.array([[1, 1, 0], [0, 1, 0]], np.float32)


def test_gather_nd_docs_negative_and_out_of_range():
    """Docs examples; negative indices count from the end; others out of range are errors."""
    np.testing.assert_array_equal(run_op("gather_nd", D, IDX)[0], [2, 3, 0])
    cube = np.arange(1, 9, dtype=np.float32).reshape(2, 2, 2)
    np.testing.assert_array_equal(run_op("gather_nd", cube, np.array([[0, 1], [1, 0.0]]))[0],
                                  [[3, 4], [5, 6]])
    np.testing.assert_array_equal(run_op("gather_nd", D, np.array([[-1, 1], [0, -2.0]]))[0], [2, 2])
    with pytest.raises(MXNetError, match="gather_nd: index 5 is out of bounds for axis 0"):
        run_op("gather_nd", D, np.array([[5, 1], [0, 3.0]]))
    with pytest.raises(MXNetError, match="gather_nd: 3 indices"):
        run_op("gather_nd", D, np.zeros((3, 1)))


def test_gather_nd_gradient_adds_up_duplicates():
    """Rows gathered twice get both head gradients; indices get zeros."""
    x = np.arange(6.0).reshape(3, 2)
    g, gi = grad_op("gather_nd", x, np.array([[0, 0, 2]]))
    np.testing.assert_array_equal(g, [[2, 2], [0, 0], [1, 1]])
    assert not gi.any()
    check_numeric_grad("gather_nd", x, np.array([[2, 0], [1, 1.0]]), wrt=[0])
    idx = np.array([[1, 1, 0], [0, 0, 1]])
    (b,) = run_op("_backward_gather_nd", np.array([1.0, 2, 3]), idx, shape=(2, 2))
    np.testing.assert_array_equal(b, [[0, 3], [3, 0]])     # (1, 0) twice: 1 + 2


def test_scatter_nd_docs_and_gradient():
    """Docs examples; the gradient is a gather; a data shape that does not fit is an error."""
    np.testing.assert_array_equal(run_op("scatter_nd", np.array([2, 3, 0.0]), IDX, shape=(2, 2))[0],
                                  [[0, 0], [2, 3]])
    cube = np.arange(1, 9.0).reshape(2, 2, 2)
    out = run_op("scatter_nd", cube, np.array([[0, 1], [1, 1.0]]), shape=(2, 2, 2, 2))[0]
    np.testing.assert_array_equal(out[1, 1], [[5, 6], [7, 8]])
    assert not out[0, 0].any()
    check_numeric_grad("scatter_nd", np.array([2, 3, 5.0]), IDX, shape=(2, 2), wrt=[0])
    with pytest.raises(MXNetError, match="scatter_nd: data shape"):
        run_op("scatter_nd", np.zeros(4), IDX, shape=(2, 2))


def test_scatter_set_nd_in_place_and_gradient():
    """MXNet's form: out=lhs, the untouched entries keep their values."""
    lhs = mx.nd.ones((2, 2))
    mx.nd._internal._scatter_set_nd(lhs, mx.nd.array([2, 3, 0]), mx.nd.array(IDX), shape=(2, 2), out=lhs)
    np.testing.assert_array_equal(lhs.asnumpy(), [[0, 1], [2, 3]])
    check_numeric_grad("_scatter_set_nd", np.ones((2, 2)), np.array([2, 3, 5.0]), IDX, shape=(2, 2),
                       wrt=[0, 1])


def test_gather_nd_symbol_shape():
    """mx.sym.gather_nd infers (Y..., X_M...) and runs bound."""
    s = mx.sym.gather_nd(mx.sym.var("a"), mx.sym.var("i"))
    assert s.infer_shape(a=(3, 4, 5), i=(2, 7))[1] == [(7, 5)]
    ex = s.bind(mx.cpu(), {"a": mx.nd.array(D), "i": mx.nd.array(IDX)})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), [2, 3, 0])


def test_ravel_and_unravel():
    """Docs examples, -1 leading dimension, int dtype kept, unravel of an index past the end."""
    a = np.array([[3, 6, 6], [4, 5, 1]], np.float32)
    np.testing.assert_array_equal(run_op("ravel_multi_index", a, shape=(7, 6))[0], [22, 41, 37])
    np.testing.assert_array_equal(run_op("_ravel_multi_index", a, shape=(-1, 6))[0], [22, 41, 37])
    (r,) = run_op("ravel_multi_index", a.astype(np.int32), shape=(7, 6))
    assert r.dtype == np.int32
    flat = np.array([22, 41, 37], np.float32)
    np.testing.assert_array_equal(run_op("unravel_index", flat, shape=(-1, 6))[0], a)
    np.testing.assert_array_equal(run_op("unravel_index", np.array([99.0]), shape=(7, 6))[0], [[16], [3]])
    with pytest.raises(MXNetError, match="ravel_multi_index: data of shape"):
        run_op("ravel_multi_index", a, shape=(7, 6, 2))


def test_batch_take_and_fill_element_0index():
    """batch_take clips int32 indices (floats are refused); fill skips out-of-range rows."""
    x = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    np.testing.assert_array_equal(run_op("batch_take", x, np.array([0, 1, 0], np.int32))[0], [1, 4, 5])
    np.testing.assert_array_equal(run_op("batch_take", x, np.array([5, -1, 2], np.int32))[0], [2, 3, 6])
    with pytest.raises(MXNetError, match="batch_take: indices must be int32"):
        run_op("batch_take", x, np.array([0, 1, 0], np.float32))
    v = np.array([9, 8, 7], np.float32)
    np.testing.assert_array_equal(run_op("fill_element_0index", x, v, np.array([1, 0, 1.0]))[0],
                                  [[1, 9], [8, 4], [5, 7]])
    np.testing.assert_array_equal(run_op("fill_element_0index", x, v, np.array([5, -1, 1.0]))[0],
                                  [[1, 2], [3, 4], [5, 7]])
    with pytest.raises(MXNetError, match="fill_element_0index: mhs"):
        run_op("fill_element_0index", x, np.zeros(2, np.float32), np.zeros(3, np.float32))
