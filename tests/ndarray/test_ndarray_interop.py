"""from_numpy / DLPack sharing and MXNet's raw-bytes pickle state (mxref/ndarray/interop.py)."""
import gc

import numpy as np
import pytest

import mxref as mx


def test_from_numpy_shares_memory_and_freezes_source():
    """zero_copy: writes through the NDArray show in numpy; numpy itself becomes read-only."""
    src = np.arange(6, dtype=np.float32).reshape(3, 2)
    arr = mx.nd.from_numpy(src)
    with pytest.raises(ValueError):
        src[0, 0] = 1
    arr[2, 1] = 100
    arr.wait_to_read()
    assert src[2, 1] == 100
    again = mx.nd.from_numpy(src)      # a second share of the (now read-only) array works
    np.testing.assert_array_equal(again.asnumpy(), src)


def test_from_numpy_copy_and_shapes():
    """zero_copy=False copies; 0-d and 0-size arrays work; non-contiguous input is a ValueError."""
    src = np.ones((2, 2), np.float64)
    arr = mx.nd.from_numpy(src, zero_copy=False)
    src[0, 0] = 5
    assert arr.asnumpy()[0, 0] == 1 and arr.dtype == np.float64
    for a in (np.array(3.0).reshape(()), np.zeros((1, 0, 2))):
        np.testing.assert_array_equal(mx.nd.from_numpy(a).asnumpy(), a)
    with pytest.raises(ValueError):
        mx.nd.from_numpy(np.ones((2, 3)).T)


def test_foreign_memory_is_not_pooled():
    """An NDArray over numpy memory gives nothing to mxref's pool when it goes away."""
    src = np.arange(4, dtype=np.float32)
    arr = mx.nd.from_numpy(src)
    del arr
    gc.collect()
    mx.nd.waitall()
    b = mx.nd.zeros((4,))
    b.wait_to_read()
    np.testing.assert_array_equal(src, np.arange(4, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_dlpack_round_trip(dtype):
    """to_dlpack_for_read/write then from_dlpack shares the memory, and outlives the source."""
    a = mx.nd.array(np.arange(12).reshape(3, 4), dtype=dtype)
    expect = a.asnumpy()
    b = mx.nd.from_dlpack(a.to_dlpack_for_read())
    c = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(a))
    c[0, 0] = 42
    c.wait_to_read()     # c has its own engine variable: the write is ordered on c, not on a
    np.testing.assert_array_equal(a.asnumpy()[0, 0], 42)
    del a
    gc.collect()
    mx.nd.ones((3, 4), dtype=dtype).wait_to_read()    # may reuse pooled memory; b's must survive
    expect[0, 0] = 42
    np.testing.assert_array_equal(b.asnumpy(), expect)
    np.testing.assert_array_equal(np.from_dlpack(b.asnumpy()), expect)


def test_getstate_setstate_round_trip():
    """__getstate__ holds MXNet's raw single-array bytes; __setstate__ reads them (also a GPU save)."""
    a = mx.nd.array([[1, 2], [3, 4]])
    state = a.__getstate__()
    assert isinstance(state["handle"], bytearray)
    b = mx.nd.zeros((1,))
    b.__setstate__(state)
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    gpu_state = {"handle": bytearray(b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00"
                                     b"\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                                     b"\x00\x00\x00\x00")}
    b.__setstate__(gpu_state)
    assert b.shape == (1,) and b.context == mx.cpu()
