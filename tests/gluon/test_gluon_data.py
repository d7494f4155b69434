"""gluon.data: datasets and transforms, samplers, DataLoader batching (types as MXNet 1.9.1),
shuffle, last_batch modes and worker processes."""
import numpy as np
import pytest

import mxref as mx
from mxref.gluon import data as gdata


def test_array_dataset_and_simple_dataset():
    """ArrayDataset zips arrays (1-D NDArrays become numpy); SimpleDataset wraps a list."""
    ds = gdata.ArrayDataset(mx.nd.arange(10).reshape((5, 2)), mx.nd.arange(5))
    x, y = ds[2]
    assert isinstance(x, mx.nd.NDArray) and x.asnumpy().tolist() == [4, 5]
    assert isinstance(y, np.float32) and y == 2 and len(ds) == 5
    assert gdata.ArrayDataset(np.arange(3))[1] == 1
    with pytest.raises(ValueError, match="same length"):
        gdata.ArrayDataset(np.arange(3), np.arange(4))
    s = gdata.SimpleDataset(list("abcde"))
    assert len(s) == 5 and s[4] == "e"


def test_transforms_filter_take_shard():
    """transform / transform_first (lazy or not), filter, take and shard."""
    ds = gdata.ArrayDataset(np.arange(6), np.arange(6) * 10)
    assert ds.transform(lambda a, b: a + b)[2] == 22
    assert ds.transform_first(lambda a: -a, lazy=False)[3] == (-3, 30)
    assert [x for x in gdata.SimpleDataset(range(6)).filter(lambda v: v % 2)] == [1, 3, 5]
    assert len(ds.take(4)) == 4 and len(ds.take(None)) == 6
    shards = [gdata.SimpleDataset(list(range(7))).shard(3, i) for i in range(3)]
    assert [list(s) for s in shards] == [[0, 1, 2], [3, 4], [5, 6]]


def test_samplers():
    """Sequential and random orders; BatchSampler's keep/discard/rollover lengths and contents."""
    assert list(gdata.SequentialSampler(3, start=2)) == [2, 3, 4]
    np.random.seed(1)
    order = list(gdata.RandomSampler(10))
    assert sorted(order) == list(range(10)) and order != list(range(10))
    seq = gdata.SequentialSampler(10)
    assert list(gdata.BatchSampler(seq, 4, "keep")) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert list(gdata.BatchSampler(seq, 4, "discard")) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    roll = gdata.BatchSampler(seq, 4, "rollover")
    assert list(roll) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(roll) == 3 and list(roll)[0] == [8, 9, 0, 1]
    with pytest.raises(ValueError, match="last_batch must be one of"):
        gdata.BatchSampler(seq, 4, "pad")


def test_dataloader_batch_types_like_mxnet():
    """numpy samples keep their dtypes (float64, int64); NDArray samples stack as float32."""
    ds = gdata.ArrayDataset(np.arange(10).reshape(5, 2).astype("float64"), np.arange(5))
    x, y = next(iter(gdata.DataLoader(ds, batch_size=2)))
    assert (x.dtype, x.shape, y.dtype, y.shape) == (np.float64, (2, 2), np.int64, (2,))
    ds = gdata.ArrayDataset(mx.nd.arange(10).reshape((5, 2)), mx.nd.arange(5))
    x, y = next(iter(gdata.DataLoader(ds, batch_size=2)))
    assert (x.dtype, y.dtype) == (np.float32, np.float32)


def test_dataloader_last_batch_modes():
    """keep/discard/rollover give MXNet 1.9.1's batches over two epochs."""
    ds = gdata.SimpleDataset(list(range(10)))
    modes = ("keep", "discard", "rollover")
    counts = [len(list(gdata.DataLoader(ds, batch_size=3, last_batch=m))) for m in modes]
    assert counts == [4, 3, 3]
    loader = gdata.DataLoader(ds, batch_size=3, last_batch="rollover")
    first = [b.asnumpy().tolist() for b in loader]
    second = [b.asnumpy().tolist() for b in loader]
    assert first == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert second == [[9, 0, 1], [2, 3, 4], [5, 6, 7]]
    assert len(gdata.DataLoader(ds, batch_size=3)) == 4


def test_dataloader_shuffle_and_argument_errors():
    """shuffle permutes each epoch; conflicting arguments raise."""
    ds = gdata.SimpleDataset(list(range(20)))
    np.random.seed(0)
    batches = [b.asnumpy().tolist() for b in gdata.DataLoader(ds, batch_size=5, shuffle=True)]
    flat = sum(batches, [])
    assert sorted(flat) == list(range(20)) and flat != list(range(20))
    with pytest.raises(ValueError, match="batch_size must be specified"):
        gdata.DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle must not be specified"):
        gdata.DataLoader(ds, batch_size=2, shuffle=True, sampler=gdata.SequentialSampler(20))
    with pytest.raises(ValueError, match="must not be specified if batch_sampler"):
        gdata.DataLoader(ds, batch_size=2, batch_sampler=gdata.BatchSampler(gdata.SequentialSampler(20), 2))


@pytest.mark.timeout(60)
def test_dataloader_workers_match_main_process():
    """Worker processes give the same batches, in order, as loading in the main process."""
    ds = gdata.ArrayDataset(mx.nd.arange(40).reshape((20, 2)), np.arange(20).astype("float32"))
    main = [[a.asnumpy() for a in b] for b in gdata.DataLoader(ds, batch_size=3)]
    loader = gdata.DataLoader(ds, batch_size=3, num_workers=2, prefetch=1)
    for _ in range(2):            # the pool is reused across epochs
        workers = [[a.asnumpy() for a in b] for b in loader]
        assert len(workers) == len(main) == 7
        for wb, mb in zip(workers, main):
            for w, m in zip(wb, mb):
                np.testing.assert_array_equal(w, m)
                assert w.dtype == m.dtype


@pytest.mark.timeout(60)
def test_dataloader_workers_custom_batchify_and_transform():
    """A custom batchify_fn and a lazy transform run in the workers."""
    ds = gdata.SimpleDataset(list(range(8))).transform(lambda v: v * 2)
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2, batchify_fn=np.array)
    assert [b.tolist() for b in loader] == [[0, 2, 4, 6], [8, 10, 12, 14]]


def test_vision_digits():
    """vision.Digits is the bundled digits dataset (1x8x8 images in [0, 1], 10 classes)."""
    ds = gdata.vision.Digits("train")
    x, y = next(iter(gdata.DataLoader(ds, batch_size=16)))
    assert x.shape == (16, 1, 8, 8) and y.shape == (16,)
    assert 0 <= x.asnumpy().min() and x.asnumpy().max() <= 1 and set(y.asnumpy()) <= set(range(10))


def test_dataloader_thread_pool_pin_memory_and_auto_reload():
    """``thread_pool=True`` loads with threads, in sampler order; ``pin_memory`` gives batches on
    ``cpu_pinned(pin_device_id)``; ``auto_reload`` is accepted (MXNet 1.9.1's argument)."""
    data = mx.gluon.data.ArrayDataset(np.arange(23, dtype=np.float32).reshape(23, 1))
    loader = mx.gluon.data.DataLoader(data, batch_size=5, num_workers=3, thread_pool=True,
                                      auto_reload=True)
    got = np.concatenate([b.asnumpy() for b in loader])
    np.testing.assert_array_equal(got[:, 0], np.arange(23))
    pinned = mx.gluon.data.DataLoader(data, batch_size=8, pin_memory=True)
    assert all(b.context == mx.cpu_pinned(0) for b in pinned)
