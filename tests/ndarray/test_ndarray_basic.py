"""NDArray basics: creation and dtypes, attributes, views that write through, copies, indexing, protocol."""
import gc
import pickle

import numpy as np
import pytest

import mxref as mx
from mxref import engine, storage
from mxref.engine.base import worker_state


def test_array_defaults_to_float32_like_mxnet(any_engine):
    """nd.array gives float32 from float64/int64/int32 numpy input and from lists; dtype= overrides."""
    for src in (np.arange(3.0), np.arange(3), np.arange(3, dtype=np.int32), [1, 2, 3]):
        a = mx.nd.array(src)
        assert a.dtype == np.float32 and a.shape == (3,)
        np.testing.assert_array_equal(a.asnumpy(), [0, 1, 2] if not isinstance(src, list) else [1, 2, 3])
    assert mx.nd.array(np.arange(3), dtype="int64").dtype == np.int64
    i8 = mx.nd.array([1, 2], dtype=np.int8)
    assert mx.nd.array(i8).dtype == np.int8          # an NDArray source keeps its dtype


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "int64", "uint8"])
def test_creation_functions_every_dtype(any_engine, dtype):
    """zeros/ones/full/empty/arange honour dtype, shape and context."""
    assert mx.nd.zeros((2, 3), dtype=dtype).asnumpy().tolist() == [[0] * 3] * 2
    o = mx.nd.ones(4, dtype=dtype)
    assert o.dtype == np.dtype(dtype).type and o.shape == (4,) and o.asnumpy().sum() == 4
    f = mx.nd.full((2,), 7, dtype=dtype)
    assert f.asnumpy().tolist() == [7, 7]
    assert mx.nd.empty((3, 1), dtype=dtype).shape == (3, 1)
    assert mx.nd.arange(0, 6, 2, dtype=dtype).asnumpy().tolist() == [0, 2, 4]
    assert mx.nd.zeros((1,), ctx=mx.cpu(1)).context == mx.cpu(1)


def test_bad_dtype_and_shape_raise_mxneterror(any_engine):
    """Unsupported dtypes and negative or non-integer shapes are rejected at call time."""
    with pytest.raises(mx.MXNetError, match="unsupported"):
        mx.nd.zeros((2,), dtype="complex64")
    with pytest.raises(mx.MXNetError, match="negative"):
        mx.nd.empty((2, -1))
    with pytest.raises(mx.MXNetError, match="shape"):
        mx.nd.ones("abc")
    with pytest.raises(mx.MXNetError):
        mx.nd.array([[1, 2], [3]])


def test_eye_and_like(any_engine):
    np.testing.assert_array_equal(mx.nd.eye(3, 4, 1).asnumpy(), np.eye(3, 4, 1))
    a = mx.nd.array([[1, 2]], dtype="int32")
    z, o = mx.nd.zeros_like(a), a.ones_like()
    assert z.dtype == np.int32 and z.asnumpy().tolist() == [[0, 0]] and o.asnumpy().tolist() == [[1, 1]]


def test_attributes_repr_and_protocol(any_engine):
    """shape/size/ndim/context/stype, MXNet's repr, len, iteration, hash by id, bool rules."""
    a = mx.nd.array([[0, 1, 2], [3, 4, 5]])
    assert (a.shape, a.size, a.ndim, a.stype) == ((2, 3), 6, 2, "default")
    assert a.ctx == a.context == mx.cpu()
    assert repr(a) == "\n[[0. 1. 2.]\n [3. 4. 5.]]\n<NDArray 2x3 @cpu(0)>"
    assert len(a) == 2 and [r.shape for r in a] == [(3,), (3,)]
    assert hash(a) == id(a) // 16 and {a: 1}[a] == 1
    assert bool(mx.nd.array([2])) and not bool(mx.nd.array([0])) and not bool(mx.nd.array(np.zeros(0)))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a)
    assert mx.nd.array([3.5]).asscalar() == np.float32(3.5)
    with pytest.raises(ValueError, match="not a scalar"):
        a.asscalar()
    np.testing.assert_array_equal(np.asarray(a), a.asnumpy())
    assert np.asarray(a, dtype=np.int64).dtype == np.int64


def test_wait_to_write_and_wait_to_read(any_engine):
    """wait_to_write returns once every queued read and write is done; the array stays usable."""
    a = mx.nd.ones((4,))
    b = a * 3
    a.wait_to_write()
    a[:] = 0
    b.wait_to_read()
    assert b.asnumpy().tolist() == [3, 3, 3, 3] and a.asnumpy().tolist() == [0, 0, 0, 0]


def test_transpose_property_is_for_at_most_2d(any_engine):
    assert mx.nd.ones((2, 3)).T.shape == (3, 2)
    with pytest.raises(mx.MXNetError, match="at most 2 dimensions"):
        _ = mx.nd.ones((1, 2, 3)).T


def test_asnumpy_returns_a_copy(any_engine):
    a = mx.nd.ones((2,))
    h = a.asnumpy()
    h[0] = 9
    assert a.asnumpy().tolist() == [1, 1]


def test_reshape_and_axis0_slices_are_views_that_write_through(any_engine):
    """reshape, a[i] and a[i:j] share memory and engine variable with the base array."""
    a = mx.nd.arange(6).reshape((2, 3))
    assert a.reshape(3, 2).shape == (3, 2) and a.reshape(shape=(-1,)).shape == (6,)
    row = a[1]
    assert row.shape == (3,) and row._chunk is a._chunk
    row[:] = 7
    a[0:1][:] = -1
    a.reshape((6,))[0] = 5
    np.testing.assert_array_equal(a.asnumpy(), [[5, -1, -1], [7, 7, 7]])
    assert mx.nd.arange(5)[2].shape == (1,)       # MXNet 1.x: no 0-d results
    assert a[-1].asnumpy().tolist() == [7, 7, 7] and a[5:9].shape == (0, 3)
    with pytest.raises(IndexError):
        a[2]
    with pytest.raises(ValueError):
        a.reshape((4, 2))


def test_other_indexing_copies(any_engine):
    """a[:, 1], stepped slices and integer-array indices return copies (MXNet 1.x)."""
    a = mx.nd.arange(12).reshape((3, 4))
    col = a[:, 1]
    assert col.shape == (3,) and col._chunk is not a._chunk
    col[:] = 100
    assert a[:, 1].asnumpy().tolist() == [1, 5, 9]
    assert a[::2].asnumpy().tolist() == [[0, 1, 2, 3], [8, 9, 10, 11]]
    assert a[1, 2].shape == (1,) and a[1, 2].asscalar() == 6
    assert a[np.array([2, 0])].asnumpy()[:, 0].tolist() == [8, 0]
    assert a[mx.nd.array([1])].shape == (1, 4)
    with pytest.raises(mx.MXNetError, match="invalid index"):
        a[:, 7]


def test_setitem_scalar_ndarray_numpy_broadcast(any_engine):
    """__setitem__ with int/slice/tuple keys and scalar, NDArray and numpy values (broadcast)."""
    a = mx.nd.ones((2, 3))
    a[0, 1] = 5
    a[1] = mx.nd.array([1, 2, 3])
    a[:, 2] = np.array([9, 8])
    np.testing.assert_array_equal(a.asnumpy(), [[1, 5, 9], [1, 2, 8]])
    a[:] = mx.nd.array([4, 5, 6])                        # broadcast over rows
    a[:, 0:2] = [[0, 0]]
    np.testing.assert_array_equal(a.asnumpy(), [[0, 0, 6], [0, 0, 6]])
    with pytest.raises(mx.MXNetError, match="cannot assign"):
        a[:] = mx.nd.ones((4,))
    with pytest.raises(mx.MXNetError, match="cannot assign"):
        a[0] = np.ones((2, 2))


def test_copy_copyto_as_in_context_astype(any_engine):
    a = mx.nd.array([1.5, 2.5])
    b = a.copy()
    b[0] = 0
    assert a.asnumpy().tolist() == [1.5, 2.5]
    c = mx.nd.zeros((2,))
    assert a.copyto(c) is c and c.asnumpy().tolist() == [1.5, 2.5]
    d = a.copyto(mx.cpu(1))
    assert d.context == mx.cpu(1) and d.asnumpy().tolist() == [1.5, 2.5]
    assert a.as_in_context(mx.cpu()) is a and a.as_in_context(mx.cpu(2)).context == mx.cpu(2)
    i = a.astype("int32")
    assert i.dtype == np.int32 and i.asnumpy().tolist() == [1, 2]
    assert a.astype(np.float32, copy=False) is a and a.astype(np.float32) is not a
    with pytest.raises(mx.MXNetError, match="shape mismatch"):
        a.copyto(mx.nd.zeros((3,)))


def test_pickle_round_trip(any_engine):
    a = mx.nd.array([[1, 2]], dtype="int64", ctx=mx.cpu(1))
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == np.int64 and b.context == mx.cpu(1) and b.asnumpy().tolist() == [[1, 2]]


def test_outputs_are_allocated_inside_the_engine_operation(any_engine, monkeypatch):
    """Results get memory lazily, from within the pushed operation that first writes them."""
    seen = []
    real_alloc = storage.alloc

    def spy(nbytes, ctx):
        seen.append(getattr(worker_state, "op_name", None))
        return real_alloc(nbytes, ctx)

    monkeypatch.setattr(storage, "alloc", spy)
    a = mx.nd.array([1, 2, 3])                  # eager copy: allocated on the caller
    b = mx.nd.ones((3,))
    c = a + b
    c.wait_to_read()
    assert seen == [None, "_ones", "elemwise_add"]
    assert mx.nd.empty((4,))._chunk.handle is None


def _settle():
    """Collect, then make the worker finish one more op: a worker may keep a reference to the last
    operation it ran (and so to that op's arrays) until it picks up the next one."""
    gc.collect()
    mx.nd.waitall()
    mx.nd.zeros((1,)).wait_to_read()
    gc.collect()
    mx.nd.waitall()


def test_deleting_an_array_frees_through_the_engine(any_engine, monkeypatch):
    """Dropping the last reference deletes the variable via the engine, which frees the memory;
    memory that was never allocated frees nothing."""
    eng = engine.get()
    deleted = {}
    real_delete = eng.delete_storage
    monkeypatch.setattr(eng, "delete_storage",
                        lambda h, ctx, var: (deleted.__setitem__(id(var), h), real_delete(h, ctx, var)))
    a = mx.nd.ones((3,))
    a.wait_to_read()
    handle, var = a._chunk.handle, a._chunk.var
    in_use = storage.stats(a.context)["bytes_in_use"]
    view = a[1:]
    del a
    gc.collect()
    assert id(var) not in deleted               # the view still holds the chunk
    del view
    _settle()
    assert id(var) in deleted and deleted[id(var)] is handle and var.deleted
    assert handle._pool == "freed" and storage.stats(mx.cpu())["bytes_in_use"] < in_use
    e = mx.nd.empty((3,))
    evar = e._chunk.var
    del e
    _settle()
    assert id(evar) in deleted and deleted[id(evar)] is None     # no memory to give back


def test_arrays_outliving_an_engine_switch_free_their_memory_directly(monkeypatch):
    """After set_engine, old arrays' variables belong to the stopped engine: their memory goes back
    to the pool directly and the new engine is never handed a foreign variable."""
    old_name = engine.get().name
    a = mx.nd.ones((3,))
    a.wait_to_read()
    handle = a._chunk.handle
    freed = []
    monkeypatch.setattr(storage, "free", freed.append)
    engine.set_engine("NaiveEngine")
    try:
        new = engine.get()
        monkeypatch.setattr(new, "delete_variable", lambda *args: pytest.fail("foreign variable"))
        monkeypatch.setattr(new, "delete_storage", lambda *args: pytest.fail("foreign variable"))
        del a
        gc.collect()
        assert freed == [handle]
    finally:
        engine.set_engine(old_name)
