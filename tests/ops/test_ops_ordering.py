"""sort / argsort / topk: order, ties, NaN, k, ret_typ, dtypes, axis=None, gradients, symbols, errors."""
import numpy as np
import pytest
from ops_check import check_numeric_grad, grad_op, run_op

import mxref as mx
from mxref.base import MXNetError
from mxref.ops.ordering import argsort_rows, topk_rows

X = np.array([[0.3, 0.2, 0.4], [0.1, 0.3, 0.2]], np.float32)


def _stable(a, ascending):
    """The specification: a stable sort, descending with ties in index order."""
    if ascending:
        return np.argsort(a, axis=-1, kind="stable")
    n = a.shape[-1]
    return (n - 1 - np.argsort(a[..., ::-1], axis=-1, kind="stable"))[..., ::-1]


def test_docstring_examples_match_mxnet():
    """The examples of MXNet's topk/sort/argsort docs, with float32 indices by default."""
    (i,) = run_op("topk", X)
    assert i.dtype == np.float32
    np.testing.assert_array_equal(i, [[2], [1]])
    v, _ = run_op("topk", X, ret_typ="value", k=2)
    np.testing.assert_allclose(v, [[0.4, 0.3], [0.3, 0.2]])
    v, _ = run_op("topk", X, ret_typ="value", k=2, is_ascend=True)
    np.testing.assert_allclose(v, [[0.2, 0.3], [0.1, 0.2]])
    v, _ = run_op("topk", X, axis=0, ret_typ="value", k=2)
    np.testing.assert_allclose(v, [[0.3, 0.3, 0.4], [0.1, 0.2, 0.2]])
    np.testing.assert_array_equal(run_op("argsort", X)[0], [[1, 0, 2], [0, 2, 1]])
    np.testing.assert_array_equal(run_op("argsort", X, axis=None)[0], [3, 1, 5, 0, 4, 2])
    s = np.array([[1, 4], [3, 1]], np.float32)
    np.testing.assert_array_equal(run_op("sort", s)[0], [[1, 4], [1, 3]])
    np.testing.assert_array_equal(run_op("sort", s, axis=None)[0], [1, 1, 3, 4])
    np.testing.assert_array_equal(run_op("sort", s, is_ascend=False)[0], [[4, 1], [3, 1]])


def test_ties_keep_index_order_both_ways():
    """Equal values keep their index order ascending and descending (MXNet 1.9.1's results)."""
    x = np.array([1, 2, 2, 2, 1], np.float32)
    v, i = run_op("topk", x, k=3, ret_typ="both")
    np.testing.assert_array_equal(i, [1, 2, 3])
    v, i = run_op("topk", x, k=3, ret_typ="both", is_ascend=True)
    np.testing.assert_array_equal(i, [0, 4, 1])
    np.testing.assert_array_equal(run_op("argsort", np.array([3, 1, 2, 1.0]), is_ascend=False)[0],
                                  [0, 2, 1, 3])


@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("k", [1, 3, 7, 40])
def test_fast_paths_equal_the_stable_specification(ascending, k):
    """argpartition + sort, and quicksort + tie repair, give exactly the stable order."""
    rng = np.random.default_rng(k)
    for a in (rng.integers(0, 4, (6, 40)).astype(np.float32), rng.standard_normal((6, 40)),
              rng.integers(0, 3, (3, 40)).astype(np.uint8)):
        want = _stable(a, ascending)
        np.testing.assert_array_equal(argsort_rows(a, ascending), want)
        np.testing.assert_array_equal(topk_rows(a, k, ascending), want[:, :k])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "int64", "uint8",
                                   "uint32"])
def test_every_dtype_keeps_the_stable_order(dtype):
    """The uint64-key sort (32-bit dtypes and less) and the quicksort + repair (64-bit) agree
    with a stable sort, with many ties, both directions."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 50, (4, 300)).astype(dtype)
    for ascending in (True, False):
        np.testing.assert_array_equal(argsort_rows(a, ascending), _stable(a, ascending))


def test_signed_zero_and_negative_nan_order_like_numpy():
    """-0.0 equals 0.0 (index order decides); a NaN with its sign bit set is still the largest."""
    a = np.array([[0.0, -0.0, -np.nan, 1.0, -1.0, np.nan]], np.float32)
    np.testing.assert_array_equal(argsort_rows(a, True), [[4, 0, 1, 3, 2, 5]])
    np.testing.assert_array_equal(argsort_rows(a, False), [[2, 5, 3, 0, 1, 4]])


@pytest.mark.parametrize("ascending", [True, False])
def test_long_rows_take_the_sampled_threshold_exactly(ascending):
    """k small on a long row: the sampled threshold path; ties, sorted data and NaN rows too."""
    rng = np.random.default_rng(7)
    rows = [rng.standard_normal(70000).astype(np.float32), np.arange(70000.0),
            rng.integers(0, 3, 70000).astype(np.float32)]
    with_nan = rng.standard_normal(70000)
    with_nan[[5, 60000]] = np.nan
    for row in rows + [with_nan]:
        want = _stable(row[None, :], ascending)[:, :10]
        np.testing.assert_array_equal(topk_rows(row[None, :], 10, ascending), want)


def test_nan_sorts_as_the_largest_value():
    """NaN comes last ascending and first descending; several NaNs keep their index order."""
    x = np.array([np.nan, 0, 5, np.nan, -1], np.float32)
    np.testing.assert_array_equal(run_op("argsort", x)[0], [4, 1, 2, 0, 3])
    np.testing.assert_array_equal(run_op("argsort", x, is_ascend=False)[0], [0, 3, 2, 1, 4])
    np.testing.assert_array_equal(run_op("topk", x, k=2)[0], [0, 3])
    np.testing.assert_array_equal(run_op("topk", np.tile(x, 20), k=3)[0], [0, 3, 5])


def test_k_mask_axis_none_and_dtypes():
    """k<=0 selects all; mask has the input shape and dtype; axis=None flattens; dtype of indices."""
    x = np.array([[1, 2], [3, 4]], np.float32)
    np.testing.assert_array_equal(run_op("topk", np.array([1, 2, 2, 2, 1.0]), k=0, ret_typ="mask")[0],
                                  np.ones(5))
    (m,) = run_op("topk", x, k=1, ret_typ="mask", axis=None)
    assert m.dtype == np.float32
    np.testing.assert_array_equal(m, [[0, 0], [0, 1]])
    (i,) = run_op("topk", x, k=3, axis=None, dtype="int32")
    assert i.dtype == np.int32
    np.testing.assert_array_equal(i, [3, 2, 1])
    v, hidden = run_op("topk", x.astype(np.int32), k=1, ret_typ="value")
    assert v.dtype == np.int32 and hidden.dtype == np.int32
    (a,) = run_op("argsort", np.array([5, 2, 7], np.int32), dtype="int64")
    assert a.dtype == np.int64
    np.testing.assert_array_equal(run_op("sort", np.array([5, 2, 7], np.uint8), is_ascend=False)[0],
                                  [7, 5, 2])
    i = run_op("topk", np.random.default_rng(0).standard_normal((2, 3, 4)), axis=-2, k=2)[0]
    assert i.shape == (2, 2, 4)


def test_bad_arguments_name_the_operator():
    """k too large, axis out of range and an unknown ret_typ are MXNetErrors."""
    with pytest.raises(MXNetError, match="topk.*k=5"):
        run_op("topk", X, k=5)
    with pytest.raises(MXNetError, match="topk.*axis 2"):
        run_op("topk", X, axis=2)
    with pytest.raises(MXNetError, match="ret_typ"):
        run_op("topk", X, ret_typ="values")
    with pytest.raises(MXNetError, match="uint8 cannot represent"):
        run_op("argsort", np.zeros(300), dtype="uint8")


def test_gradients_scatter_back_to_the_source_positions():
    """sort/topk values: the head gradient goes back where each value came from; indices: zero."""
    x = np.random.default_rng(3).standard_normal((3, 5))
    check_numeric_grad("sort", x, axis=1)
    check_numeric_grad("sort", x, axis=None, is_ascend=False)
    check_numeric_grad("topk", x, k=2, ret_typ="value", axis=0)
    check_numeric_grad("topk", x, k=3, ret_typ="both")
    (g,) = grad_op("topk", x, k=2, ret_typ="indices")
    assert not g.any()
    (g,) = grad_op("argsort", x)
    assert not g.any()


def test_symbol_forms_infer_and_run():
    """mx.sym.topk/sort: visible outputs, inferred shapes and dtypes, and bind/forward."""
    data = mx.sym.var("x")
    both = mx.sym.topk(data, k=2, ret_typ="both", dtype="int64")
    assert len(both.list_outputs()) == 2
    assert both.infer_shape(x=(2, 4))[1] == [(2, 2), (2, 2)]
    assert both.infer_type(x=np.float32)[1] == [np.float32, np.int64]
    s = mx.sym.sort(data, axis=0, is_ascend=False)
    assert len(s.list_outputs()) == 1
    ex = s.bind(mx.cpu(), {"x": mx.nd.array(X)})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), np.sort(X, axis=0)[::-1])


def test_ndarray_methods_and_autograd():
    """x.topk / x.sort / x.argsort and autograd through sort."""
    x = mx.nd.array(X)
    np.testing.assert_array_equal(x.argsort().asnumpy(), [[1, 0, 2], [0, 2, 1]])
    x.attach_grad()
    with mx.autograd.record():
        y = x.sort(axis=1)
    y.backward(mx.nd.array([[1, 2, 3], [4, 5, 6]]))
    np.testing.assert_array_equal(x.grad.asnumpy(), [[2, 1, 3], [4, 6, 5]])
