"""row_sparse keys on the single-process stores (local, device), against MXNet 1.9.1's answers:
pushes summed by row (duplicates too) and replacing the value, row_sparse_pull of unsorted and
repeated ids, pull into dense and row_sparse outputs, the lazy optimizer, and the refusals."""
import numpy as np
import pytest

import mxref as mx
from mxref import kvstore as kv
from mxref.ndarray import sparse

SHAPE = (6, 2)


def _rsp(rows, ids, shape=SHAPE):
    return sparse.row_sparse_array((np.asarray(rows, np.float32), ids), shape=shape)


def _store(kv_type, **opt):
    store = kv.create(kv_type)
    if opt:
        store.set_optimizer(mx.optimizer.SGD(**opt))
    return store


def test_push_sums_rows_and_replaces(any_engine, kv_type):
    """MXNet 1.9.1: init rows {1, 3}; push [rows {0, 3} of 2, row {3} of 5] -> rows 0: 2, 3: 7
    (row 1 is gone: the sum replaces the value); pulling ids [3, 0, 3, 5] gives ids 0, 3, 5."""
    store = _store(kv_type)
    store.init("w", _rsp(np.ones((2, 2)), [1, 3]))
    store.push("w", [_rsp(np.full((2, 2), 2), [0, 3]), _rsp(np.full((1, 2), 5), [3])])
    out = sparse.zeros("row_sparse", SHAPE)
    store.row_sparse_pull("w", out=out, row_ids=mx.nd.array([3, 0, 3, 5]))
    assert out.indices.asnumpy().tolist() == [0, 3, 5]
    assert out.data.asnumpy().tolist() == [[2, 2], [7, 7], [0, 0]]


def test_duplicate_ids_in_one_value_are_summed(kv_type):
    store = _store(kv_type)
    store.init(0, sparse.zeros("row_sparse", SHAPE))
    g = sparse.row_sparse_array((np.array([[1, 1], [2, 2], [4, 4]], np.float32), [4, 1, 4]), shape=SHAPE)
    store.push(0, g)
    out = sparse.zeros("row_sparse", SHAPE)
    store.row_sparse_pull(0, out=out, row_ids=mx.nd.array([4, 1]))
    np.testing.assert_array_equal(out.asnumpy()[[1, 4]], [[2, 2], [5, 5]])


def test_pull_whole_value(kv_type):
    """MXNet 1.9.1: pull of a row_sparse key densifies into a dense out; a row_sparse out is left
    alone unless ignore_sparse=False."""
    store = _store(kv_type)
    store.init("w", _rsp(np.ones((2, 2)), [1, 3]))
    dense = mx.nd.zeros(SHAPE)
    store.pull("w", out=dense)
    expect = np.zeros(SHAPE, np.float32)
    expect[[1, 3]] = 1
    np.testing.assert_array_equal(dense.asnumpy(), expect)
    out = sparse.zeros("row_sparse", SHAPE)
    store.pull("w", out=out)
    assert out.asnumpy().sum() == 0
    store.pull("w", out=out, ignore_sparse=False)
    np.testing.assert_array_equal(out.asnumpy(), expect)


def test_lazy_sgd_momentum_matches_mxnet(any_engine, kv_type):
    """MXNet 1.9.1: weight ones, SGD(lr=0.1, momentum=0.9), pushes rows {0, 3} of 2 then row 3 of 5:
    row 0 -> 0.8, row 3 -> 0.12, untouched rows stay 1."""
    store = _store(kv_type, learning_rate=0.1, momentum=0.9)
    store.init(0, _rsp(np.ones(SHAPE), np.arange(6)))
    store.push(0, _rsp(np.full((2, 2), 2), [0, 3]))
    store.push(0, _rsp(np.full((1, 2), 5), [3]))
    out = sparse.zeros("row_sparse", SHAPE)
    store.row_sparse_pull(0, out=out, row_ids=mx.nd.arange(6))
    np.testing.assert_allclose(out.asnumpy()[:, 0], [0.8, 1, 1, 0.12, 1, 1], rtol=1e-6)


def test_lazy_store_memory_follows_rows(kv_type):
    """A 10^9 x 8 key costs memory in proportion to the rows pushed, not to its shape."""
    store = _store(kv_type, learning_rate=0.1, momentum=0.9)
    shape = (10 ** 9, 8)
    store.init(0, sparse.zeros("row_sparse", shape))
    ids = np.array([5, 10 ** 9 - 1, 123456789] * 10 + list(range(100, 197)))
    store.push(0, sparse.row_sparse_array((np.ones((ids.size, 8), np.float32), ids), shape=shape))
    out = sparse.zeros("row_sparse", shape)
    store.row_sparse_pull(0, out=out, row_ids=mx.nd.array([10 ** 9 - 1, 5], dtype="int64"))
    np.testing.assert_allclose(out.data.asnumpy(), -1.0, rtol=1e-6)   # lr * summed grad of 10
    held = store._rsp[0].nbytes
    assert held < 100 * 8 * 4 * 2 * 2 * 2 + 100 * 16 * 2, held     # weight + momentum, doubling


def test_refusals_name_the_key(kv_type):
    store = _store(kv_type)
    store.init("w", _rsp(np.ones((2, 2)), [1, 3]))
    store.init("d", mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match="'w' is row_sparse"):
        store.push("w", mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match="'d' is not row_sparse"):
        store.row_sparse_pull("d", out=sparse.zeros("row_sparse", SHAPE), row_ids=mx.nd.array([1]))
    with pytest.raises(mx.MXNetError, match="out must be row_sparse"):
        store.row_sparse_pull("w", out=mx.nd.zeros(SHAPE), row_ids=mx.nd.array([1]))
    out = sparse.zeros("row_sparse", SHAPE)
    store.row_sparse_pull("w", out=out, row_ids=mx.nd.array([6]))
    with pytest.raises(mx.MXNetError, match=r"row ids \[6(\.0)?\] are not rows of \[0, 6\)"):
        out.asnumpy()


def test_pull_of_a_dense_key_into_row_sparse_out(kv_type):
    """ignore_sparse=True (the default) leaves a row_sparse out alone; False casts the value."""
    store = _store(kv_type)
    value = np.zeros(SHAPE, np.float32)
    value[[1, 4]] = [[1, 2], [3, 4]]
    store.init(0, mx.nd.array(value))
    out = sparse.zeros("row_sparse", SHAPE)
    store.pull(0, out=out)
    assert out.asnumpy().sum() == 0
    store.pull(0, out=out, ignore_sparse=False)
    assert out.stype == "row_sparse" and out.indices.asnumpy().tolist() == [1, 4]
    np.testing.assert_array_equal(out.asnumpy(), value)


def test_row_ids_of_any_shape_and_one_per_key():
    """As MXNet: 2-D row_ids are flattened; with several keys, one row_ids per key serves all of
    that key's outputs."""
    store = mx.kv.create("local")
    store.init(["a", "b"], [mx.nd.ones((4, 2)).tostype("row_sparse")] * 2)
    out = [[mx.nd.zeros((4, 2)).tostype("row_sparse") for _ in range(2)] for _ in range(2)]
    ids = [mx.nd.array([[3, 0], [3, 3]]), mx.nd.array([1])]
    store.row_sparse_pull(["a", "b"], out=out, row_ids=ids)
    np.testing.assert_array_equal(out[0][1].asnumpy(), [[1, 1], [0, 0], [0, 0], [1, 1]])
    np.testing.assert_array_equal(out[1][0].asnumpy(), [[0, 0], [1, 1], [0, 0], [0, 0]])


def test_row_ids_nested_one_list_per_key():
    """row_ids=[[ids per output of key a], ids for every output of key b] (MXNet's aggregator test)."""
    store = mx.kv.create("local")
    store.init(["a", "b"], [mx.nd.ones((4, 2)).tostype("row_sparse")] * 2)
    out = [[mx.nd.zeros((4, 2)).tostype("row_sparse") for _ in range(2)] for _ in range(2)]
    store.row_sparse_pull(["a", "b"], out=out,
                          row_ids=[[mx.nd.array([0]), mx.nd.array([2])], mx.nd.array([3])])
    assert [o.asnumpy()[:, 0].tolist() for o in out[0] + out[1]] == \
        [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 1]]
