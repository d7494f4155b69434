"""mx.io.ImageRecordIter: batches equal a reference decode, MXNet 1.9.1's own batches, threads, epochs."""
import io
import os

import numpy as np
import pytest
from PIL import Image

import mxref as mx
from mxref.ops.image.resample import resize

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "image", "im2rec")
REC, IDX = os.path.join(FIX, "mxnet.rec"), os.path.join(FIX, "mxnet.idx")


def _pack(tmp_path, n=10, hw=(9, 12), fmt="PNG"):
    """n random images (RGB, HxW) packed with labels i % 3; returns (rec, idx, images)."""
    rs = np.random.RandomState(0)
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), str(tmp_path / "d.rec"), "w")
    imgs = []
    for i in range(n):
        img = rs.randint(0, 256, hw + (3,)).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, fmt, quality=90)
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i % 3), i, 0), buf.getvalue()))
        imgs.append(mx.image.imdecode(buf.getvalue()).asnumpy())
    rec.close()
    return str(tmp_path / "d.rec"), str(tmp_path / "d.idx"), imgs


def _all(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]


def test_equals_reference_decode(tmp_path):
    """Resize short edge, center crop and normalization equal a step-by-step numpy reference."""
    rec, idx, imgs = _pack(tmp_path, fmt="JPEG")
    kw = dict(resize=8, mean_r=1.0, mean_g=2.0, mean_b=3.0, std_r=2.0, std_g=4.0, std_b=8.0, scale=0.5)
    got = _all(mx.io.ImageRecordIter(rec, (3, 6, 7), 4, path_imgidx=idx, **kw))
    ref = []
    for img in imgs:
        r = resize(img, 10, 8, 1)                                   # 9x12 -> 8x10 (bilinear)
        r = r[1:7, 1:8].astype(np.float32)                           # center 6x7
        ref.append(((r - [1, 2, 3]) * 0.5 / np.array([2, 4, 8], np.float32)).transpose(2, 0, 1))
    data = np.concatenate([g[0] for g in got])[:10]
    np.testing.assert_allclose(data, np.stack(ref), rtol=1e-6)
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got])[:10], [i % 3 for i in range(10)])
    assert [g[2] for g in got] == [0, 0, 2]


def test_matches_mxnet_batches():
    """On MXNet-packed records, within one gray level of MXNet 1.9.1's batches (OpenCV's fixed-point
    bilinear rounds some pixels the other way); labels and pads exactly."""
    ref = np.load(os.path.join(FIX, "iterators.npz"))
    it = mx.io.ImageRecordIter(path_imgrec=REC, path_imgidx=IDX, data_shape=(3, 6, 6), batch_size=4,
                               resize=7, mean_r=10.0, mean_g=20.0, mean_b=30.0, std_r=2.0, std_g=3.0,
                               std_b=4.0, scale=0.5)
    got = _all(it)
    np.testing.assert_allclose(np.stack([g[0] for g in got]), ref["rec_data"], atol=0.5 / 2 + 1e-6)
    np.testing.assert_array_equal(np.stack([g[1] for g in got]), ref["rec_label"])
    assert [g[2] for g in got] == list(ref["rec_pad"])


def test_threads_and_seed_do_not_change_batches(tmp_path):
    """rand_crop + rand_mirror batches depend on seed and epoch, not on preprocess_threads or prefetch."""
    rec, idx, _ = _pack(tmp_path)
    kw = dict(path_imgidx=idx, rand_crop=True, rand_mirror=True, shuffle=True, seed=5)
    a = _all(mx.io.ImageRecordIter(rec, (3, 5, 5), 4, preprocess_threads=1, prefetch_buffer=1, **kw))
    b = _all(mx.io.ImageRecordIter(rec, (3, 5, 5), 4, preprocess_threads=4, prefetch_buffer=3, **kw))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x[0], y[0])
        np.testing.assert_array_equal(x[1], y[1])
    c = _all(mx.io.ImageRecordIter(rec, (3, 5, 5), 4, preprocess_threads=2, **dict(kw, seed=6)))
    assert not np.array_equal(a[0][0], c[0][0])
    aug = dict(path_imgidx=idx, rand_crop=True, rand_mirror=True)      # seed_aug seeds augmentation alone
    d = _all(mx.io.ImageRecordIter(rec, (3, 5, 5), 4, seed_aug=9, seed=1, **aug))
    e = _all(mx.io.ImageRecordIter(rec, (3, 5, 5), 4, seed_aug=9, seed=2, **aug))
    f = _all(mx.io.ImageRecordIter(rec, (3, 5, 5), 4, seed_aug=10, seed=1, **aug))
    assert np.array_equal(d[0][0], e[0][0]) and not np.array_equal(d[0][0], f[0][0])


def test_round_batch_epochs_as_mxnet():
    """round_batch: the last batch borrows from the start and the next epoch begins after them
    (MXNet 1.9.1 gives labels [[0,0,0,1],[1,1,0,0]] pad 2, then [[0,1,1,1]], then again)."""
    it = mx.io.ImageRecordIter(REC, (3, 6, 6), 4)
    seen = []
    for _ in range(3):
        seen.append([(g[1].tolist(), g[2]) for g in _all(it)])
        it.reset()
    assert seen[0] == [([0, 0, 0, 1], 0), ([1, 1, 0, 0], 2)]
    assert seen[1] == [([0, 1, 1, 1], 0)]
    assert seen[2] == seen[0]
    it = mx.io.ImageRecordIter(REC, (3, 6, 6), 4, round_batch=False)
    last = _all(it)[-1]
    assert last[2] == 2 and not last[0][2:].any()


def test_parts_mirror_labels_and_errors(tmp_path):
    """num_parts splits records; mirror flips; label_width checks; unsupported parameters raise."""
    rec, idx, imgs = _pack(tmp_path, n=8, hw=(5, 5))
    parts = [np.concatenate([g[1] for g in _all(mx.io.ImageRecordIter(rec, (3, 5, 5), 2, num_parts=2,
                                                                       part_index=k))]) for k in range(2)]
    np.testing.assert_array_equal(np.concatenate(parts), [i % 3 for i in range(8)])
    flip = _all(mx.io.ImageRecordIter(rec, (3, 5, 5), 8, mirror=True))[0][0]
    np.testing.assert_array_equal(flip[0], imgs[0][:, ::-1].transpose(2, 0, 1))
    it = mx.io.ImageRecordIter(rec, (3, 5, 5), 2, data_name="img", label_name="lab")
    assert it.provide_data[0].name == "img" and it.provide_label[0] == ("lab", (2,))
    with pytest.raises(mx.base.MXNetError, match="label_width"):
        mx.io.ImageRecordIter(rec, (3, 5, 5), 2, label_width=2).next()
    with pytest.raises(mx.base.MXNetError, match="max_rotate_angle"):
        mx.io.ImageRecordIter(rec, (3, 5, 5), 2, max_rotate_angle=10)
    mx.io.ImageRecordIter(rec, (3, 5, 5), 2, and_mirror=False).close()      # unknown: MXNet ignores it too
    mx.io.ImageRecordIter(rec, (3, 5, 5), 2, max_rotate_angle=0).close()      # the default is accepted


def test_imglist_labels_and_gray(tmp_path):
    """path_imglist supplies (multi-dim) labels by record id; data_shape (1, H, W) decodes gray."""
    rec, idx, imgs = _pack(tmp_path, n=4, hw=(5, 5))
    lst = tmp_path / "l.lst"
    lst.write_text("".join(f"{i}\t{i}.5\t{-i}.0\tx{i}.png\n" for i in range(4)))
    it = mx.io.ImageRecordIter(rec, (1, 5, 5), 4, path_imglist=str(lst), label_width=2)
    b = it.next()
    np.testing.assert_array_equal(b.label[0].asnumpy(), [[0.5, 0], [1.5, -1], [2.5, -2], [3.5, -3]])
    assert b.data[0].shape == (4, 1, 5, 5)


# -- the fast path (image_record_fast: Pillow's C decoder + one C loop) against the reference ------

def _batches(rec, idx, reference, **kw):
    from mxref._ext import reference_kernels
    from mxref.io import image_record_fast as fast
    saved = fast.C
    try:
        if reference:
            fast.C = None
        with reference_kernels() if reference else _nothing():
            return _all(mx.io.ImageRecordIter(rec, kw.pop("shape", (3, 6, 7)), 4, path_imgidx=idx, **kw))
    finally:
        fast.C = saved


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
@pytest.mark.parametrize("kw", [dict(resize=8),
                                dict(resize=11, inter_method=2, rand_crop=True, rand_mirror=True),
                                dict(inter_method=0, mirror=True), dict(resize=9, inter_method=3),
                                dict(resize=8, inter_method=4, shape=(1, 6, 7)),
                                dict(resize=4, rand_crop=True),         # too small: scaled up again
                                dict(resize=8, round_batch=False, preprocess_threads=3)])
def test_fast_path_equals_reference(tmp_path, fmt, kw):
    """Same bits as the numpy pipeline: every interpolation, crops, mirrors, gray, two resizes."""
    from mxref.io import image_record_fast as fast
    if fast.C is None:
        pytest.skip("mxref._ext.image_kernels not built or disabled")
    rec, idx, _ = _pack(tmp_path, n=10, hw=(9, 12), fmt=fmt)
    norm = dict(mean_r=1.0, mean_g=2.0, mean_b=3.0, std_r=2.0, std_g=4.0, std_b=8.0, scale=0.5, seed=3)
    got = _batches(rec, idx, False, **norm, **kw)
    ref = _batches(rec, idx, True, **norm, **kw)
    assert len(got) == len(ref)
    for (d, lab, pad), (rd, rlab, rpad) in zip(got, ref):
        np.testing.assert_array_equal(d, rd)
        np.testing.assert_array_equal(lab, rlab)
        assert pad == rpad


def test_jpeg_frame_reads_the_header_or_declines():
    from mxref.io.image_record_fast import decode, jpeg_frame
    img = np.random.RandomState(1).randint(0, 256, (5, 7, 3)).astype(np.uint8)
    for kw in (dict(quality=90), dict(progressive=True), dict(subsampling=2)):
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, "JPEG", **kw)
        assert jpeg_frame(buf.getvalue()) == (7, 5, 3)
        for c in (1, 3):
            np.testing.assert_array_equal(decode(buf.getvalue(), c),
                                          mx.image.imdecode(buf.getvalue(), flag=c == 3).asnumpy())
    buf = io.BytesIO()
    Image.fromarray(img[:, :, 0]).save(buf, "JPEG")
    assert jpeg_frame(buf.getvalue()) == (7, 5, 1)
    np.testing.assert_array_equal(decode(buf.getvalue(), 3), mx.image.imdecode(buf.getvalue()).asnumpy())
    buf = io.BytesIO()
    Image.fromarray(img).convert("CMYK").save(buf, "JPEG")
    assert jpeg_frame(buf.getvalue()) is None                   # 4 components (Adobe): the plugin
    assert jpeg_frame(b"\x89PNG\r\n") is None and jpeg_frame(b"\xff\xd8\xff") is None
