"""The sparse storage classes: constructors, components, conversions, copies (mxref/ndarray/sparse.py)."""
import pickle

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError

DTYPES = [np.float32, np.float64]


def _random_dense(shape, density, rng, dtype):
    a = rng.standard_normal(shape).astype(dtype)
    a[rng.random(shape) > density] = 0
    return a


@pytest.mark.parametrize("dtype", DTYPES)
def test_csr_from_components_matches_dense(dtype):
    """(data, indices, indptr) -> the dense matrix scipy would build; components come back as NDArrays."""
    a = mx.nd.sparse.csr_matrix(([1., 2., 3.], [0, 2, 1], [0, 1, 1, 3]), shape=(3, 4), dtype=dtype)
    assert isinstance(a, mx.nd.sparse.CSRNDArray) and isinstance(a, mx.nd.NDArray)
    assert a.stype == "csr" and a.shape == (3, 4) and a.dtype == dtype
    expect = np.zeros((3, 4), dtype)
    expect[0, 0], expect[2, 2], expect[2, 1] = 1, 2, 3
    np.testing.assert_array_equal(a.asnumpy(), expect)
    assert a.indptr.asnumpy().tolist() == [0, 1, 1, 3]
    assert a.indices.asnumpy().tolist() == [0, 2, 1]
    assert a.data.asnumpy().tolist() == [1, 2, 3]
    assert a.indices.dtype == np.int64 and a.data.dtype == dtype


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_dense_round_trip_through_each_stype(stype, dtype):
    """dense -> tostype(stype) -> tostype('default') is the identity, empty rows included."""
    rng = np.random.default_rng(0)
    a = _random_dense((6, 5), 0.3, rng, dtype)
    a[2] = 0
    x = mx.nd.array(a, dtype=dtype)
    s = x.tostype(stype)
    assert s.stype == stype and s.dtype == dtype
    np.testing.assert_array_equal(s.asnumpy(), a)
    np.testing.assert_array_equal(s.tostype("default").asnumpy(), a)
    np.testing.assert_array_equal(mx.nd.cast_storage(x, stype=stype).asnumpy(), a)
    assert x.tostype("default").stype == "default"


def test_csr_from_dense_numpy_and_coo():
    """A dense source keeps its dtype; COO (data, (row, col)) sums duplicate coordinates."""
    a = np.array([[0, 1.5], [2, 0]], dtype=np.float64)
    c = mx.nd.sparse.csr_matrix(a)
    assert c.dtype == np.float64
    np.testing.assert_array_equal(c.asnumpy(), a)
    coo = mx.nd.sparse.csr_matrix(([1., 2., 3.], ([1, 0, 1], [0, 1, 0])), shape=(2, 2))
    np.testing.assert_array_equal(coo.asnumpy(), [[0, 2], [4, 0]])


def test_row_sparse_unsorted_and_duplicate_ids():
    """Unsorted ids are sorted with their rows; duplicate ids are summed."""
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    r = mx.nd.sparse.row_sparse_array((data, [4, 1, 4]), shape=(6, 2))
    assert r.indices.asnumpy().tolist() == [1, 4]
    np.testing.assert_array_equal(r.data.asnumpy(), [[2, 3], [4, 6]])
    dense = np.zeros((6, 2), np.float32)
    dense[1], dense[4] = [2, 3], [4, 6]
    np.testing.assert_array_equal(r.asnumpy(), dense)


def test_row_sparse_shape_defaults_and_retain():
    """Without shape the rows run to the largest id; retain keeps only the listed ids."""
    r = mx.nd.sparse.row_sparse_array(([[1., 1.], [2., 2.]], [0, 3]))
    assert r.shape == (4, 2) and r.stype == "row_sparse"
    kept = r.retain(mx.nd.array([3, 2], dtype=np.int64))
    assert kept.stype == "row_sparse"
    assert kept.indices.asnumpy().tolist() == [3]
    np.testing.assert_array_equal(kept.asnumpy(), [[0, 0], [0, 0], [0, 0], [2, 2]])
    np.testing.assert_array_equal(mx.nd.sparse.retain(r, [0]).asnumpy()[0], [1, 1])


def test_zeros_empty_and_nd_zeros_stype():
    """sparse.zeros / empty / nd.zeros(stype=) have no stored entries and read as zeros."""
    for stype in ("csr", "row_sparse"):
        for z in (mx.nd.sparse.zeros(stype, (3, 4)), mx.nd.sparse.empty(stype, (3, 4)),
                  mx.nd.zeros((3, 4), stype=stype), mx.nd.empty((3, 4), stype=stype)):
            assert z.stype == stype and z.shape == (3, 4)
            assert z.data.shape[0] == 0
            np.testing.assert_array_equal(z.asnumpy(), np.zeros((3, 4)))
    assert mx.nd.sparse.zeros("csr", (2, 3)).indptr.asnumpy().tolist() == [0, 0, 0]
    assert mx.nd.sparse.zeros("default", (2,)).stype == "default"


def test_csr_row_slicing_stays_csr():
    """a[i] and a[start:stop] are csr with indptr rebased at 0 (empty slices too)."""
    rng = np.random.default_rng(1)
    a = _random_dense((7, 5), 0.4, rng, np.float32)
    c = mx.nd.sparse.csr_matrix(a)
    for key in (slice(1, 4), slice(None, 2), slice(5, None), slice(3, 3), 6, -1):
        s = c[key]
        want = a[key] if isinstance(key, slice) else a[key:key + 1 if key != -1 else None]
        assert s.stype == "csr"
        np.testing.assert_array_equal(s.asnumpy(), want)
        assert s.indptr.asnumpy()[0] == 0
    with pytest.raises(MXNetError, match="step 1"):
        c[::2]


def test_copyto_as_in_context_and_copy_between_stypes():
    """copyto a context keeps the stype; copyto an array of another stype casts into it."""
    r = mx.nd.sparse.row_sparse_array(([[1., 2.]], [1]), shape=(3, 2))
    same = r.as_in_context(mx.cpu())
    assert same is r
    c = r.copyto(mx.cpu(0))
    assert c.stype == "row_sparse" and c is not r
    np.testing.assert_array_equal(c.asnumpy(), r.asnumpy())
    dense = mx.nd.zeros((3, 2))
    r.copyto(dense)
    np.testing.assert_array_equal(dense.asnumpy(), [[0, 0], [1, 2], [0, 0]])
    back = mx.nd.sparse.zeros("row_sparse", (3, 2))
    mx.nd.array([[0, 0], [0, 0], [5, 5]]).copyto(back)
    assert back.indices.asnumpy().tolist() == [2]
    with pytest.raises(MXNetError, match="shape mismatch"):
        r.copyto(mx.nd.zeros((2, 2)))


def test_setitem_full_slice_and_astype():
    """x[:] = value rewrites every component; astype converts the values, not the ids."""
    c = mx.nd.sparse.zeros("csr", (2, 2))
    c[:] = np.array([[1, 0], [0, 3]], dtype=np.float32)
    np.testing.assert_array_equal(c.asnumpy(), [[1, 0], [0, 3]])
    d = c.astype(np.float64)
    assert d.dtype == np.float64 and d.stype == "csr" and d.indices.dtype == np.int64
    c[:] = 0
    assert c.data.shape == (0,)
    r = mx.nd.sparse.zeros("row_sparse", (3, 2))
    r[:] = 1.5
    assert r.indices.asnumpy().tolist() == [0, 1, 2] and r.asnumpy().sum() == 9
    with pytest.raises(MXNetError, match=r"\[:\] only"):
        c[0:1] = 1
    with pytest.raises(MXNetError, match="a number"):
        c[:] = "x"


def test_components_are_snapshots_of_a_rewritten_array():
    """A component taken before a rewrite keeps its values (writes put fresh components in place)."""
    c = mx.nd.sparse.csr_matrix(np.array([[1, 0], [0, 2]], dtype=np.float32))
    old = c.data
    c[:] = np.array([[0, 0], [0, 7]], dtype=np.float32)
    assert old.asnumpy().tolist() == [1, 2]
    assert c.data.asnumpy().tolist() == [7]


@pytest.mark.parametrize("bad, match", [
    (([1., 2.], [0, 1], [0, 1]), "indptr must have"),
    (([1., 2.], [0, 5], [0, 1, 2]), "column indices"),
    (([1.], [0, 1], [0, 1, 2]), "data"),
    (([1., 2.], [0, 1], [0, 2, 1]), "never decrease"),
])
def test_csr_bad_components_raise_naming_the_field(bad, match):
    with pytest.raises(MXNetError, match=match):
        mx.nd.sparse.csr_matrix(bad, shape=(2, 3))


def test_row_sparse_bad_components_raise():
    with pytest.raises(MXNetError, match="one row of data per index"):
        mx.nd.sparse.row_sparse_array((np.ones((2, 2)), [0]), shape=(3, 2))
    with pytest.raises(MXNetError, match="row indices must lie"):
        mx.nd.sparse.row_sparse_array((np.ones((1, 2)), [3]), shape=(3, 2))
    with pytest.raises(MXNetError, match="unknown sparse storage type"):
        mx.nd.sparse.zeros("coo", (2, 2))


def test_sparse_array_from_sparse_and_scipy_like_sources():
    """sparse.array takes sparse NDArrays and scipy.sparse matrices (anything with tocsr/nnz)."""
    r = mx.nd.sparse.row_sparse_array(([[1., 2.]], [0]), shape=(2, 2))
    assert mx.nd.sparse.array(r).stype == "row_sparse"

    class FakeScipy:   # the duck type scipy.sparse matrices present
        nnz = 2
        shape = (2, 3)
        dtype = np.dtype(np.float64)

        def tocsr(self):
            return self

        def sum_duplicates(self):
            pass

        data, indices, indptr = np.array([4., 5.]), np.array([2, 0]), np.array([0, 1, 2])

    c = mx.nd.sparse.array(FakeScipy())
    assert c.stype == "csr" and c.dtype == np.float64
    np.testing.assert_array_equal(c.asnumpy(), [[0, 0, 4], [5, 0, 0]])
    assert mx.nd.array(FakeScipy()).stype == "csr"
    with pytest.raises(MXNetError, match="expected a sparse NDArray"):
        mx.nd.sparse.array(np.ones((2, 2)))


def test_asscipy_when_scipy_is_installed():
    spsp = pytest.importorskip("scipy.sparse")
    a = np.array([[0, 1], [2, 0]], dtype=np.float32)
    m = mx.nd.sparse.csr_matrix(a).asscipy()
    assert isinstance(m, spsp.csr_matrix)
    np.testing.assert_array_equal(m.toarray(), a)
    np.testing.assert_array_equal(mx.nd.sparse.csr_matrix(spsp.csr_matrix(a)).asnumpy(), a)


def test_pickle_keeps_the_stype():
    r = mx.nd.sparse.row_sparse_array(([[1., 2.]], [1]), shape=(3, 2))
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.stype == "row_sparse" and r2.indices.asnumpy().tolist() == [1]
    np.testing.assert_array_equal(r2.asnumpy(), r.asnumpy())


def test_sparse_writes_are_ordered_by_the_engine(any_engine):
    """A read queued after a write of a sparse array sees that write (one engine variable)."""
    c = mx.nd.sparse.zeros("csr", (50, 40))
    dense = mx.nd.zeros((50, 40))
    for k in range(5):
        src = mx.nd.array(np.eye(50, 40, k=k))
        src.tostype("csr").copyto(c)           # rewrites c's components on a worker
        c.copyto(dense)                        # reads c after that write
    np.testing.assert_array_equal(dense.asnumpy(), np.eye(50, 40, k=4))
    assert c.data.shape == (36,)


def test_sparse_arrays_refuse_a_gpu_context():
    """The sparse kernels run on the host: a sparse array on a GPU context is a clear error."""
    r = mx.nd.sparse.zeros("row_sparse", (3, 2))
    with pytest.raises(MXNetError, match="CPU only"):
        r.copyto(mx.gpu(0))
    with pytest.raises(MXNetError, match="CPU only"):
        mx.nd.sparse.zeros("csr", (2, 2), ctx=mx.gpu(0))
