"""MNISTIter on tiny IDX files written here (plain and gzip): shapes and 1/256 scaling as MXNet 1.9.1,
full batches only, seeded shuffle fixed across epochs, num_parts/part_index shards, bad files."""
import gzip
import struct

import numpy as np
import pytest

import mxref as mx
import mxref.io  # noqa: F401 - registers mx.io
from mxref import MXNetError
from mxref.io.mnist_iter import read_idx

IMAGES = np.random.RandomState(0).randint(0, 256, size=(10, 4, 3)).astype(np.uint8)
LABELS = np.arange(10, dtype=np.uint8)


def _write_idx(path, arr, gz):
    raw = struct.pack(">BBBB", 0, 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}i", *arr.shape)
    raw += arr.tobytes()
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(raw)
    return str(path)


@pytest.fixture(params=["plain", "gzip"])
def files(tmp_path, request):
    gz = request.param == "gzip"
    return (_write_idx(tmp_path / "img", IMAGES, gz), _write_idx(tmp_path / "lab", LABELS, gz))


def test_shapes_scaling_and_full_batches(files):
    """(batch,1,rows,cols) or flat (batch,rows*cols), pixels/256, labels (batch,), remainder dropped."""
    img, lab = files
    it = mx.io.MNISTIter(image=img, label=lab, batch_size=3, shuffle=False, silent=True)
    # MXNet 1.9.1: provide_data (3, 1, 4, 3), provide_label (3,), labels [0,1,2],[3,4,5],[6,7,8]
    assert [d.shape for d in it.provide_data + it.provide_label] == [(3, 1, 4, 3), (3,)]
    batches = list(it)
    assert [b.label[0].asnumpy().tolist() for b in batches] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert all(b.pad == 0 for b in batches)
    np.testing.assert_array_equal(batches[1].data[0].asnumpy()[:, 0] * 256, IMAGES[3:6])
    flat = mx.io.MNISTIter(image=img, label=lab, batch_size=3, shuffle=False, flat=True, silent=True)
    assert flat.provide_data[0].shape == (3, 12)
    np.testing.assert_array_equal(flat.next().data[0].asnumpy(),
                                  IMAGES[:3].reshape(3, 12).astype(np.float32) / 256)


def test_shuffle_is_seeded_and_fixed_across_epochs(files):
    """shuffle permutes once with `seed`: every epoch repeats the order; another seed differs."""
    img, lab = files

    def order(seed):
        it = mx.io.MNISTIter(image=img, label=lab, batch_size=5, seed=seed, silent=True)
        epochs = []
        for _ in range(2):
            epochs.append(np.concatenate([b.label[0].asnumpy() for b in it]).astype(int).tolist())
            it.reset()
        assert epochs[0] == epochs[1]
        return epochs[0]

    first = order(0)
    assert sorted(first) == list(range(10)) and first != list(range(10))
    assert order(0) == first and order(1) != first


def test_parts_match_mxnet_and_tile_the_data(files):
    """Part k of P holds examples [int(n/P*k), int(n/P*(k+1))) (MXNet 1.9.1: part 1 of 3 -> 3,4,5)."""
    img, lab = files
    it = mx.io.MNISTIter(image=img, label=lab, batch_size=3, shuffle=False, silent=True,
                         num_parts=3, part_index=1)
    assert [b.label[0].asnumpy().tolist() for b in it] == [[3, 4, 5]]
    seen = []
    for part in range(4):
        it = mx.io.MNISTIter(image=img, label=lab, batch_size=1, silent=True, num_parts=4,
                             part_index=part)
        seen += [int(b.label[0].asnumpy()[0]) for b in it]
    assert sorted(seen) == list(range(10))


def test_read_idx_types_and_errors(tmp_path):
    """read_idx handles other IDX element types; non-IDX, truncated or mismatched files raise."""
    arr = np.arange(6, dtype=">i4").reshape(2, 3)
    path = tmp_path / "ints"
    path.write_bytes(struct.pack(">BBBBii", 0, 0, 0x0C, 2, 2, 3) + arr.tobytes())
    np.testing.assert_array_equal(read_idx(str(path)), arr)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(MXNetError, match="not an IDX file"):
        read_idx(str(tmp_path / "bad"))
    path.write_bytes(struct.pack(">BBBBii", 0, 0, 0x0C, 2, 2, 3) + arr.tobytes()[:-4])
    with pytest.raises(MXNetError, match="truncated"):
        read_idx(str(path))
    img = _write_idx(tmp_path / "img", IMAGES, False)
    lab = _write_idx(tmp_path / "lab", LABELS[:9], False)
    with pytest.raises(MXNetError, match="10 images but 9 labels"):
        mx.io.MNISTIter(image=img, label=lab, silent=True)
    with pytest.raises(MXNetError, match="cannot read"):
        mx.io.MNISTIter(image=str(tmp_path / "missing"), label=lab, silent=True)
