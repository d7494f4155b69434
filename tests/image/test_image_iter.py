"""mx.image.ImageIter over a .rec (MXNet-packed fixture) and over image lists; last_batch_handle; sharding."""
import os

import numpy as np
import pytest

import mxref as mx

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "image", "im2rec")
REC, IDX, LST = (os.path.join(FIX, "mxnet" + e) for e in (".rec", ".idx", ".lst"))
ROOT = os.path.join(FIX, "images")


def _batches(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]


def test_matches_mxnet_on_its_own_records():
    """Batches from MXNet-packed records equal MXNet 1.9.1's ImageIter batches (make_fixtures.py)."""
    ref = np.load(os.path.join(FIX, "iterators.npz"))
    it = mx.image.ImageIter(batch_size=4, data_shape=(3, 6, 6), path_imgrec=REC, path_imgidx=IDX)
    got = _batches(it)
    assert it.provide_data[0].shape == (4, 3, 6, 6) and it.provide_label[0].shape == (4,)
    np.testing.assert_allclose(np.stack([g[0] for g in got]), ref["img_data"], atol=1e-4)
    np.testing.assert_array_equal(np.stack([g[1] for g in got]), ref["img_label"])
    assert [g[2] for g in got] == list(ref["img_pad"])
    assert got[0][0].dtype == np.float32


def test_sequential_rec_lst_and_list_agree():
    """The .rec read sequentially, the .lst + path_root and a Python imglist give the same batches."""
    a = _batches(mx.image.ImageIter(3, (3, 8, 8), path_imgrec=REC))
    b = _batches(mx.image.ImageIter(3, (3, 8, 8), path_imglist=LST, path_root=ROOT))
    entries = [ln.strip().split("\t") for ln in open(LST)]
    imglist = [[float(e[1]), e[2]] for e in entries]
    c = _batches(mx.image.ImageIter(3, (3, 8, 8), imglist=imglist, path_root=ROOT))
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(x[0], y[0])
        np.testing.assert_array_equal(x[0], z[0])
        np.testing.assert_array_equal(x[1], y[1])
    dec = np.load(os.path.join(FIX, "decoded.npz"))
    np.testing.assert_array_equal(a[0][0][0], dec["rgb"][0].transpose(2, 0, 1))


@pytest.mark.parametrize("handle,pads,nb", [("pad", [0, 2], 2), ("discard", [0], 1), ("roll_over", [0], 1)])
def test_last_batch_handle(handle, pads, nb):
    """6 images in batches of 4: pad fills from the start, discard drops, roll_over keeps the tail."""
    it = mx.image.ImageIter(4, (3, 8, 8), path_imgrec=REC, path_imgidx=IDX, last_batch_handle=handle)
    got = _batches(it)
    assert [g[2] for g in got] == pads and len(got) == nb
    if handle == "roll_over":
        it.reset()
        first = _batches(it)[0]
        np.testing.assert_array_equal(first[1], [1, 1, 0, 0])    # the 2 kept images, then the new epoch
    if handle == "pad":
        np.testing.assert_array_equal(got[1][1], [1, 1, 0, 0])


def test_shuffle_parts_and_multilabel(tmp_path):
    """shuffle permutes, num_parts splits evenly, label_width reads several labels per line."""
    it = mx.image.ImageIter(6, (3, 8, 8), path_imgrec=REC, path_imgidx=IDX, shuffle=True)
    assert sorted(_batches(it)[0][1].tolist()) == [0, 0, 0, 1, 1, 1]
    parts = [_batches(mx.image.ImageIter(3, (3, 8, 8), path_imgrec=REC, path_imgidx=IDX, num_parts=2,
                                         part_index=k))[0][1].tolist() for k in range(2)]
    assert parts == [[0, 0, 0], [1, 1, 1]]
    lst = tmp_path / "multi.lst"
    lst.write_text("".join(f"{i}\t{i}.0\t{2 * i}.0\t{e.split(chr(9))[-1]}" for i, e in enumerate(open(LST))))
    it = mx.image.ImageIter(2, (3, 8, 8), label_width=2, path_imglist=str(lst), path_root=ROOT)
    assert it.provide_label[0].shape == (2, 2)
    np.testing.assert_array_equal(it.next().label[0].asnumpy(), [[0, 0], [1, 2]])


def test_augmenters_and_errors():
    """kwargs build the CreateAugmenter chain; bad data_shape raises as MXNet does; mx.img is mx.image."""
    assert mx.img is mx.image and mx.img.ImageIter is mx.image.ImageIter
    it = mx.image.ImageIter(2, (3, 4, 4), path_imgrec=REC, rand_crop=True, rand_mirror=True,
                            mean=True, std=True)
    assert [type(a).__name__ for a in it.auglist][-1] == "ColorNormalizeAug"
    assert abs(float(it.next().data[0].asnumpy().mean())) < 3
    with pytest.raises(ValueError):
        mx.image.ImageIter(2, (1, 4, 4), path_imgrec=REC)
    with pytest.raises(ValueError):
        mx.image.ImageIter(2, (4, 4), path_imgrec=REC)
