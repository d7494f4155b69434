"""The lazy row table of row_sparse keys (``mxref/kvstore/row_store.py``) against a dense numpy
array: scatter, gather (rows never written are zeros), growth, duplicate sums, the wire format."""
import numpy as np
import pytest

from mxref.kvstore.row_store import RowStore, pack_rows, split_by_parts, sum_rows, unpack_rows


def test_row_store_matches_a_dense_array():
    rng = np.random.default_rng(0)
    store, dense = RowStore(1000, 3, np.float32, capacity=2), np.zeros((1000, 3), np.float32)
    for _ in range(30):
        ids = np.unique(rng.integers(0, 1000, rng.integers(1, 40)))
        rows = rng.standard_normal((ids.size, 3)).astype(np.float32)
        store.scatter(ids, rows)
        dense[ids] = rows
        ask = np.unique(rng.integers(0, 1000, 50))
        np.testing.assert_array_equal(store.gather(ask), dense[ask])
    np.testing.assert_array_equal(store.dense(), dense)
    held = np.flatnonzero(np.abs(dense).sum(1))
    assert len(store) == held.size
    # values at most doubled past the rows held, plus 16 bytes of index per row
    assert store.nbytes <= 2 * held.size * 3 * 4 + 16 * held.size + 64
    store.clear()
    assert len(store) == 0 and not store.gather(held[:5]).any()


def test_check_names_the_bad_row():
    with pytest.raises(ValueError, match="row id 10 is outside the part's"):
        RowStore(10, 2, np.float32).check(np.array([3, 10]), "push")


def test_sum_rows_adds_duplicates_in_order():
    g = sum_rows(np.array([5, 1, 5, 3, 1]), np.arange(10, dtype=np.float64).reshape(5, 2))
    assert g.ids.tolist() == [1, 3, 5]
    assert g.rows.tolist() == [[2 + 8, 3 + 9], [6, 7], [0 + 4, 1 + 5]]


def test_wire_format_round_trip_and_size_check():
    ids, rows = np.array([2, 7], np.int64), np.array([[1, 2], [3, 4]], np.float32)
    buf = pack_rows(ids, rows)
    assert buf.nbytes == 2 * 8 + 4 * 4
    back = unpack_rows(buf, 2, 2, np.float32)
    assert back.ids.tolist() == [2, 7] and back.rows.tolist() == rows.tolist()
    with pytest.raises(ValueError, match="row_sparse message of 32 bytes"):
        unpack_rows(buf, 3, 2, np.float32)


def test_split_by_parts():
    ids = np.array([0, 4, 5, 9, 12])
    assert split_by_parts(ids, [(0, 5), (5, 10), (10, 13)]) == [slice(0, 2), slice(2, 4), slice(4, 5)]
