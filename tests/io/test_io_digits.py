"""The bundled digits: 1797 8x8 images of 10 classes scaled to [0, 1]; a fixed stratified 80/20
split; DigitsIter batches and sharding (every example exactly once); the Gluon-style dataset."""
import gzip
import os

import numpy as np
import pytest

import mxref as mx
import mxref.io  # noqa: F401 - registers mx.io
from mxref import MXNetError
from mxref.io.digits import DIGITS_PATH


def test_file_is_bundled_with_its_readme():
    """The data file ships inside the package (57,523 bytes, 1797 rows of 65 integers)."""
    assert os.path.getsize(DIGITS_PATH) == 57523
    with gzip.open(DIGITS_PATH, "rt") as f:
        rows = f.read().split()
    assert len(rows) == 1797 and {len(r.split(",")) for r in rows} == {65}
    assert os.path.exists(os.path.join(os.path.dirname(DIGITS_PATH), "README.md"))


def test_load_digits_shapes_range_and_classes():
    """float32 (N,1,8,8) in [0,1] (pixel counts / 16), float32 labels 0..9, every class present."""
    data, label = mx.io.load_digits()
    assert data.shape == (1797, 1, 8, 8) and data.dtype == np.float32 and label.dtype == np.float32
    assert data.min() == 0.0 and data.max() == 1.0
    np.testing.assert_array_equal(np.unique(data * 16), np.arange(17))
    assert np.bincount(label.astype(int)).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    # The first image of the UCI file is a zero; its first row is 0,0,5,13,9,1,0,0.
    assert label[0] == 0 and (data[0, 0, 0] * 16).tolist() == [0, 0, 5, 13, 9, 1, 0, 0]
    flat, _ = mx.io.load_digits(flat=True)
    np.testing.assert_array_equal(flat, data.reshape(1797, 64))


def test_split_is_fixed_stratified_and_disjoint():
    """train/val partition the data 1438/359, about 80/20 in every class, the same on every call."""
    (xt, yt), (xv, yv) = mx.io.load_digits("train"), mx.io.load_digits("val")
    assert (len(yt), len(yv)) == (1438, 359)
    per_class = np.bincount(yt.astype(int)) / np.bincount(mx.io.load_digits()[1].astype(int))
    assert np.all(np.abs(per_class - 0.8) < 0.01)
    all_rows = {r.tobytes() + bytes([int(y)]) for r, y in zip(*mx.io.load_digits())}
    train_rows = {r.tobytes() + bytes([int(y)]) for r, y in zip(xt, yt)}
    val_rows = {r.tobytes() + bytes([int(y)]) for r, y in zip(xv, yv)}
    assert train_rows | val_rows <= all_rows
    np.testing.assert_array_equal(mx.io.load_digits("train")[0], xt)
    with pytest.raises(MXNetError, match="split"):
        mx.io.load_digits("test")


def test_digits_iter_batches():
    """DigitsIter gives 'data' (batch,1,8,8) or flat (batch,64) and 'softmax_label' (batch,)."""
    it = mx.io.DigitsIter(batch_size=100, split="val")
    assert [(d.name, d.shape) for d in it.provide_data] == [("data", (100, 1, 8, 8))]
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (100,))]
    batches = list(it)
    assert len(batches) == 4 and batches[-1].pad == 41
    _, yv = mx.io.load_digits("val")
    np.testing.assert_array_equal(np.concatenate([b.label[0].asnumpy() for b in batches])[:359], yv)
    flat = mx.io.DigitsIter(batch_size=32, flat=True, last_batch_handle="discard")
    assert flat.provide_data[0].shape == (32, 64) and len(list(flat)) == 1438 // 32


@pytest.mark.parametrize("num_parts", [1, 2, 3, 5])
def test_shards_cover_each_example_once(num_parts):
    """num_parts/part_index shards of the train split hold every example exactly once."""
    _, yt = mx.io.load_digits("train")
    seen = []
    for part in range(num_parts):
        it = mx.io.DigitsIter(batch_size=64, num_parts=num_parts, part_index=part, shuffle=True,
                              last_batch_handle="pad")
        for b in it:
            seen.append(b.label[0].asnumpy()[:64 - b.pad])
        assert it.num_data in (len(yt) // num_parts, len(yt) // num_parts + 1)
    got = np.concatenate(seen)
    assert len(got) == len(yt)
    np.testing.assert_array_equal(np.bincount(got.astype(int)), np.bincount(yt.astype(int)))
    with pytest.raises(MXNetError, match="part_index"):
        mx.io.DigitsIter(batch_size=8, num_parts=2, part_index=-1)


def test_shards_concatenate_to_the_split():
    """Workers' shards, in rank order, are consecutive pieces of the split: no overlap, no gap."""
    parts = [mx.io.DigitsIter(batch_size=10, num_parts=3, part_index=k, split="all") for k in range(3)]
    x, y = mx.io.load_digits("all")
    np.testing.assert_array_equal(np.concatenate([p.data[0][1].asnumpy() for p in parts]), x)
    np.testing.assert_array_equal(np.concatenate([p.label[0][1].asnumpy() for p in parts]), y)
    assert [p.num_data for p in parts] == [599, 599, 599]


def test_dataset_items_and_transform():
    """DigitsDataset[i] is (image (1,8,8) float32, float32 label); transform maps every pair."""
    ds = mx.io.DigitsDataset("val")
    x, y = ds[3]
    xv, yv = mx.io.load_digits("val")
    assert len(ds) == 359 and x.shape == (1, 8, 8) and x.dtype == np.float32
    np.testing.assert_array_equal(x, xv[3])
    assert y == yv[3]
    doubled = mx.io.DigitsDataset("val", flat=True, transform=lambda img, lab: (img * 2, lab + 1))
    x2, y2 = doubled[3]
    assert x2.shape == (64,) and x2.max() == 2 * xv[3].max() and y2 == yv[3] + 1
