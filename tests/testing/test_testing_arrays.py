"""mxref.testing.arrays: dense and sparse random test data, and the numpy helpers MXNet's tests use."""
import numpy as np
import pytest

from mxref.base import MXNetError
from mxref.testing import arrays


def test_dense_random_arrays_and_shapes():
    np.random.seed(0)
    a = arrays.rand_ndarray((3, 4))
    assert a.shape == (3, 4) and a.dtype == np.float32 and a.stype == "default"
    assert arrays.rand_ndarray((2,), dtype=np.float64).dtype == np.float64
    lo_hi = arrays.random_uniform_arrays((5,), (2, 2), low=2.0, high=3.0)
    assert len(lo_hi) == 2 and all(((x >= 2) & (x < 3)).all() for x in lo_hi)
    assert sorted(arrays.random_sample([1, 2, 3, 4], 4)) == [1, 2, 3, 4]
    assert len(arrays.rand_shape_nd(3, dim=2)) == 3


def test_row_sparse_values_match_their_parts():
    np.random.seed(1)
    arr, (val, idx) = arrays.rand_sparse_ndarray((6, 3), "row_sparse", density=0.5)
    dense = np.zeros((6, 3), np.float32)
    dense[idx] = val
    assert arr.stype == "row_sparse"
    np.testing.assert_array_equal(arr.asnumpy(), dense)
    given, (v2, i2) = arrays.rand_sparse_ndarray((6, 3), "row_sparse", rsp_indices=np.array([1, 4]),
                                                 data_init=2.0)
    assert list(i2) == [1, 4] and (v2 == 2.0).all()
    empty, _ = arrays.rand_sparse_ndarray((4, 2), "row_sparse", density=0.0)
    assert (empty.asnumpy() == 0).all()


@pytest.mark.parametrize("distribution", ["uniform", "powerlaw"])
def test_csr_parts_rebuild_the_array(distribution):
    np.random.seed(2)
    csr, (indptr, indices, data) = arrays.rand_sparse_ndarray((5, 16), "csr", density=0.5,
                                                              distribution=distribution)
    assert csr.stype == "csr"
    rebuilt = np.zeros((5, 16), np.float32)
    ip, ix, d = indptr.asnumpy(), indices.asnumpy(), data.asnumpy()
    for r in range(5):
        rebuilt[r, ix[ip[r]:ip[r + 1]]] = d[ip[r]:ip[r + 1]]
    np.testing.assert_array_equal(csr.asnumpy(), rebuilt)
    if distribution == "powerlaw":               # each row holds twice the previous row's entries
        nnz = np.diff(ip)
        assert nnz[2] == 2 * nnz[1] and nnz[3] == 2 * nnz[2]


def test_bad_storage_type_or_distribution_is_an_error():
    with pytest.raises(MXNetError, match="unknown storage type"):
        arrays.rand_sparse_ndarray((2, 2), "coo")
    with pytest.raises(MXNetError, match="only 'uniform'"):
        arrays.rand_sparse_ndarray((2, 2), "row_sparse", distribution="powerlaw")
    assert arrays.create_sparse_array((4, 3), "row_sparse", rsp_indices=[3, 0]).stype == "row_sparse"
    assert arrays.create_sparse_array_zd((4, 3), "csr", density=0.3).stype == "csr"


def test_numpy_helpers():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(arrays.np_reduce(x, (0, 2), True, np.sum),
                                  x.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(arrays.np_reduce(x, 1, False, np.max), x.max(axis=1))
    np.testing.assert_array_equal(arrays.np_reduce(x, None, False, np.sum), x.sum())
    np.testing.assert_array_equal(arrays.collapse_sum_like(x, (3, 1)), x.sum(axis=(0, 2)).reshape(3, 1))
    assert arrays.collapse_sum_like(np.zeros((0, 2)), (1, 2)).shape == (1, 2)
    np.testing.assert_array_equal(arrays.assign_each(np.array([1.0, 4.0]), np.sqrt), [1.0, 2.0])
    np.testing.assert_array_equal(arrays.assign_each2(np.array([1.0]), np.array([2.0]), max), [2.0])
    np.testing.assert_array_equal(arrays.create_vector(4).asnumpy(), np.arange(4))
    x0, y0 = arrays.rand_coord_2d(0, 3, 5, 6)
    assert 0 <= x0 < 3 and y0 == 5
    sparse = pytest.importorskip("scipy.sparse")     # the optional [sparse] extra
    m = sparse.csr_matrix(np.arange(1.0, 13.0).reshape(3, 4))
    arrays.shuffle_csr_column_indices(m)        # as MXNet's: the ids move, the values stay
    assert all(sorted(m.indices[4 * r:4 * r + 4]) == [0, 1, 2, 3] for r in range(3))
