"""The data-iterator contract: DataDesc (a (name, shape) tuple with dtype and layout), DataBatch
fields, and DataIter's next() built from iter_next/getdata/getlabel/getpad/getindex."""
import pickle

import numpy as np
import pytest

import mxref as mx
import mxref.io  # noqa: F401 - registers mx.io


def test_datadesc_is_a_name_shape_tuple():
    """DataDesc compares and unpacks as (name, shape); dtype float32 and layout NCHW by default."""
    d = mx.io.DataDesc("x", (2, 3))
    name, shape = d
    assert (name, shape) == ("x", (2, 3)) and d == ("x", (2, 3))
    assert d.dtype is np.float32 and d.layout == "NCHW"
    # repr as MXNet 1.9.1: repr(mx.io.DataDesc('x', (2, 3)))
    assert repr(d) == "DataDesc[x,(2, 3),<class 'numpy.float32'>,NCHW]"
    d2 = mx.io.DataDesc("y", (5,), np.int32, "NC")
    assert (d2.dtype, d2.layout) == (np.int32, "NC")
    back = pickle.loads(pickle.dumps(d2))
    assert back == d2 and (back.dtype, back.layout) == (np.int32, "NC")


def test_get_batch_axis_and_get_list():
    """get_batch_axis finds 'N' (0 without a layout); get_list pairs shapes with optional types."""
    assert mx.io.DataDesc.get_batch_axis("TNC") == 1
    assert mx.io.DataDesc.get_batch_axis(None) == 0
    assert mx.io.DataDesc.get_batch_axis("CHW") == -1
    descs = mx.io.DataDesc.get_list([("a", (1, 2)), ("b", (3,))], [("b", np.float16), ("a", np.int32)])
    assert [(d.name, d.shape, d.dtype) for d in descs] == [("a", (1, 2), np.int32),
                                                           ("b", (3,), np.float16)]
    assert mx.io.DataDesc.get_list([("a", (1, 2))], None)[0].dtype is np.float32


def test_databatch_fields_and_str():
    """DataBatch keeps every field; str lists the shapes as MXNet prints them."""
    b = mx.io.DataBatch([mx.nd.zeros((3, 2, 2))], [mx.nd.zeros((3,))], pad=1, index=np.arange(3),
                        bucket_key=7, provide_data=[("data", (3, 2, 2))])
    assert (b.pad, b.bucket_key, b.provide_label) == (1, 7, None)
    assert b.index.tolist() == [0, 1, 2] and b.provide_data == [("data", (3, 2, 2))]
    # str(batch) of mx.io.NDArrayIter(np.arange(40).reshape(10,2,2), np.arange(10), 3).next()
    assert str(b) == "DataBatch: data shapes: [(3, 2, 2)] label shapes: [(3,)]"
    assert str(mx.io.DataBatch([mx.nd.zeros((1,))])).endswith("label shapes: None")
    with pytest.raises(TypeError, match="list"):
        mx.io.DataBatch(mx.nd.zeros((1,)))


class _Countdown(mx.io.DataIter):
    """A minimal iterator written with the four-step protocol."""

    def __init__(self, n):
        super().__init__(batch_size=2)
        self.n, self.i = n, 0

    def reset(self):
        self.i = 0

    def iter_next(self):
        self.i += 1
        return self.i <= self.n

    def getdata(self):
        return [mx.nd.full((2,), self.i)]

    def getlabel(self):
        return [mx.nd.zeros((2,))]

    def getpad(self):
        return 1 if self.i == self.n else 0

    def getindex(self):
        return np.array([self.i])


def test_next_is_built_from_the_protocol():
    """Iterating a DataIter subclass calls iter_next/get* and stops with StopIteration; reset rewinds."""
    it = _Countdown(3)
    batches = list(it)
    assert [b.data[0].asnumpy()[0] for b in batches] == [1, 2, 3]
    assert [b.pad for b in batches] == [0, 0, 1] and batches[2].index.tolist() == [3]
    assert list(it) == []
    it.reset()
    assert len(list(it)) == 3


def test_missing_protocol_is_named():
    """A subclass that implements nothing fails with the class name, not silently."""
    class Empty(mx.io.DataIter):
        pass
    with pytest.raises(NotImplementedError, match="Empty"):
        next(Empty())
    assert Empty().getindex() is None
