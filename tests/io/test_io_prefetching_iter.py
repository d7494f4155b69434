"""PrefetchingIter: the same batches as the inner iterators, joined and renamed; reset between epochs;
an exception raised on the prefetch thread reaches the caller with its original traceback."""
import threading
import time
import traceback

import numpy as np
import pytest

import mxref as mx
import mxref.io  # noqa: F401 - registers mx.io
from mxref import MXNetError


def _labels(it):
    return [b.label[0].asnumpy().astype(int).tolist() for b in it]


def test_same_batches_as_inner_iterator():
    """Two epochs through the prefetcher equal two epochs of the inner iterator."""
    inner = mx.io.NDArrayIter(np.zeros((10, 2)), np.arange(10), 4)
    it = mx.io.PrefetchingIter(inner)
    first = _labels(it)
    it.reset()
    assert first == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]] and _labels(it) == first
    it.reset()
    b = it.next()
    assert b.provide_data == it.provide_data and it.batch_size == 4
    threads = [w.thread for w in it._workers]
    it.close()
    assert not any(t.is_alive() for t in threads)


def test_joins_and_renames_several_iterators():
    """Data lists are concatenated in iterator order and renamed (MXNet's docstring example)."""
    a = mx.io.NDArrayIter({"data": mx.nd.ones((100, 10))}, batch_size=25)
    b = mx.io.NDArrayIter({"data": mx.nd.zeros((100, 10))}, batch_size=25)
    it = mx.io.PrefetchingIter([a, b], rename_data=[{"data": "data_1"}, {"data": "data_2"}])
    assert [(d.name, d.shape) for d in it.provide_data] == [("data_1", (25, 10)), ("data_2", (25, 10))]
    batches = list(it)
    assert len(batches) == 4
    assert [d.asnumpy()[0, 0] for d in batches[0].data] == [1.0, 0.0]
    it.close()


def test_unequal_iterators_raise():
    """Iterators that end at different batches are reported instead of silently truncated."""
    a = mx.io.NDArrayIter(np.zeros((8, 2)), None, 4)
    b = mx.io.NDArrayIter(np.zeros((4, 2)), None, 4)
    it = mx.io.PrefetchingIter([a, b])
    it.next()
    with pytest.raises(MXNetError, match="different numbers of batches"):
        it.next()


class _Failing(mx.io.NDArrayIter):
    """Raises on the second batch of every epoch, from whatever thread reads it."""

    def next(self):
        if self.cursor >= 0:
            self.boom()
        return super().next()

    def boom(self):
        raise ValueError(f"broken record in {threading.current_thread().name}")


def test_error_on_prefetch_thread_reaches_consumer():
    """The worker's ValueError is re-raised by next() with the worker's frames in its traceback."""
    it = mx.io.PrefetchingIter(_Failing(np.zeros((12, 2)), None, 3))
    it.next()
    with pytest.raises(ValueError, match="broken record in PrefetchingIter-0") as info:
        it.next()
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "boom" in frames and "_loop" in frames
    it.reset()   # still usable after the error
    assert it.next().data[0].shape == (3, 2)
    it.close()
    with pytest.raises(MXNetError, match="closed"):
        it.next()


def test_prefetches_while_consumer_works():
    """The next batch is read during the consumer's work: total time is about the max, not the sum."""
    class Slow(mx.io.NDArrayIter):
        def next(self):
            time.sleep(0.05)
            return super().next()

    it = mx.io.PrefetchingIter(Slow(np.zeros((24, 2)), None, 4))
    time.sleep(0.06)                     # let the first batch arrive
    start = time.perf_counter()
    for _ in it:
        time.sleep(0.05)                 # the consumer's work
    elapsed = time.perf_counter() - start
    it.close()
    assert elapsed < 6 * 0.1 * 0.85, f"no overlap: {elapsed:.3f}s for 6 batches"
