"""ResizeIter against MXNet 1.9.1: a fixed number of batches per epoch, wrapping the inner iterator,
with and without resetting it at each epoch."""
import numpy as np
import pytest

import mxref as mx
import mxref.io  # noqa: F401 - registers mx.io
from mxref import MXNetError

DATA = np.arange(40).reshape(10, 2, 2)


def _epochs(it, n):
    out = []
    for _ in range(n):
        out.append([(b.data[0].asnumpy()[:, 0, 0].astype(int).tolist(), b.pad) for b in it])
        it.reset()
    return out


def test_longer_epoch_wraps_inner_iterator():
    """size=5 over a 4-batch iterator: the fifth batch is the inner iterator's first again."""
    it = mx.io.ResizeIter(mx.io.NDArrayIter(DATA, np.arange(10), 3), 5)
    # MXNet 1.9.1: mx.io.ResizeIter(mx.io.NDArrayIter(DATA, np.arange(10), 3), 5), two epochs
    epoch = [([0, 4, 8], 0), ([12, 16, 20], 0), ([24, 28, 32], 0), ([36, 0, 4], 2), ([0, 4, 8], 0)]
    assert _epochs(it, 2) == [epoch, epoch]
    assert it.provide_data == it.data_iter.provide_data and it.batch_size == 3


def test_shorter_epoch_without_internal_reset_continues():
    """reset_internal=False: the next epoch picks up where the inner iterator stopped."""
    it = mx.io.ResizeIter(mx.io.NDArrayIter(DATA, np.arange(10), 3), 2, reset_internal=False)
    # MXNet 1.9.1: same call, three epochs
    assert _epochs(it, 3) == [[([0, 4, 8], 0), ([12, 16, 20], 0)],
                              [([24, 28, 32], 0), ([36, 0, 4], 2)],
                              [([0, 4, 8], 0), ([12, 16, 20], 0)]]


def test_step_protocol_and_empty_inner():
    """getdata/getlabel/getpad read the current batch; an inner iterator with no batch is an error."""
    it = mx.io.ResizeIter(mx.io.NDArrayIter(DATA, np.arange(10), 4), 1)
    assert it.iter_next() and it.getpad() == 0 and it.getindex() is None
    assert it.getlabel()[0].asnumpy().tolist() == [0, 1, 2, 3]
    assert it.getdata()[0].shape == (4, 2, 2)
    assert not it.iter_next()
    empty = mx.io.NDArrayIter(DATA[:2], None, 3, last_batch_handle="discard")
    with pytest.raises(MXNetError, match="no batch"):
        mx.io.ResizeIter(empty, 2).next()
