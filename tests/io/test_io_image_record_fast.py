"""ImageRecordIter's fast path (mxref/io/image_record_fast.py + _ext/image_kernels.pyx): the
decode into a numpy buffer, the compact resize taps, the per-record draws, and whole epochs (parts,
round_batch, a reset mid-epoch, errors, threads) against the reference pipeline."""
import gc
import io
import threading
import time

import numpy as np
import pytest
from PIL import Image

import mxref as mx
from mxref.io import image_record_fast as fast
from mxref.io.image_record_iter import _Draws
from mxref.ops.image.resample import _weights

needs_ext = pytest.mark.skipif(fast.C is None, reason="mxref._ext.image_kernels not built or disabled")


def _jpeg(img, **kw):
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "JPEG", **kw)
    return buf.getvalue()


def _pack(tmp_path, n=11, hw=(9, 12), bad=()):
    """n random JPEG records (labels i % 3); records in ``bad`` hold bytes that are no image."""
    rs = np.random.RandomState(0)
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), str(tmp_path / "d.rec"), "w")
    for i in range(n):
        payload = b"not an image" if i in bad else _jpeg(rs.randint(0, 256, hw + (3,)).astype(np.uint8))
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i % 3), i, 0), payload))
    rec.close()
    return str(tmp_path / "d.rec"), str(tmp_path / "d.idx")


def _epochs(rec, idx, reference, epochs=2, stop_after=None, **kw):
    """Batches of ``epochs`` epochs as (data, label, pad); the first epoch stops after
    ``stop_after`` batches (a reset mid-epoch). ``reference``: the numpy pipeline."""
    saved = fast.C
    try:
        if reference:
            fast.C = None
        it = mx.io.ImageRecordIter(rec, kw.pop("shape", (3, 6, 7)), 4, path_imgidx=idx, **kw)
        out = []
        for e in range(epochs):
            for k, b in enumerate(it):
                if e == 0 and stop_after is not None and k == stop_after:
                    break
                out.append((b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad))
            it.reset()
        it.close()
        return out
    finally:
        fast.C = saved


def _same(a, b):
    assert len(a) == len(b)
    for (d, lab, pad), (rd, rlab, rpad) in zip(a, b):
        np.testing.assert_array_equal(d, rd)
        np.testing.assert_array_equal(lab, rlab)
        assert pad == rpad


# -- decode ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(quality=90), dict(progressive=True), dict(subsampling=0),
                                dict(subsampling=2, quality=70)])
def test_decode_into_buffer_equals_reference(kw):
    """A matching JPEG is decoded straight into a numpy RGBX buffer (a strided RGB view): the
    reference decoder's pixels, in color and gray, whole and odd sizes."""
    rs = np.random.RandomState(2)
    for hw in ((5, 7), (17, 33)):
        img = rs.randint(0, 256, hw + (3,)).astype(np.uint8)
        for payload, c in ((_jpeg(img, **kw), 3), (_jpeg(img[:, :, 0], **kw), 1)):
            got = fast.decode(payload, c)
            ref = mx.image.imdecode(payload, flag=int(c == 3)).asnumpy()
            np.testing.assert_array_equal(got, ref)
            if fast._pil_core() is not None and fast.C is not None:
                assert got.strides[1] == (4 if c == 3 else 1)       # the buffer path was taken


def test_decode_converts_and_fails_as_reference():
    """Gray <-> color conversions and PNG go through the general reader; a truncated or broken
    JPEG raises MXNetError as the reference does."""
    img = np.random.RandomState(3).randint(0, 256, (6, 8, 3)).astype(np.uint8)
    color, gray = _jpeg(img), _jpeg(img[:, :, 1])
    np.testing.assert_array_equal(fast.decode(color, 1), mx.image.imdecode(color, flag=0).asnumpy())
    np.testing.assert_array_equal(fast.decode(gray, 3), mx.image.imdecode(gray, flag=1).asnumpy())
    png = io.BytesIO()
    Image.fromarray(img).save(png, "PNG")
    np.testing.assert_array_equal(fast.decode(png.getvalue(), 3), img)
    for broken in (color[:len(color) // 2], color[:200] + b"\x00" * 50):
        with pytest.raises(mx.base.MXNetError, match="imdecode"):
            fast.decode(broken, 3)
            mx.image.imdecode(broken)             # (only reached if the fast path accepted it)


# -- the resize taps and the C loop ------------------------------------------------------------------

@pytest.mark.parametrize("interp", [None, 0, 1, 2, 3, 4])
@pytest.mark.parametrize("sizes", [(6, 9), (9, 6), (7, 7), (3, 20), (20, 3)])
def test_taps_rebuild_the_dense_weights(interp, sizes):
    """(lo, w) taps scattered back give exactly the dense weight matrix, inside the source."""
    n_out, n_in = sizes
    if interp is None and n_out != n_in:
        return
    lo, w = fast._taps(interp, n_out, n_in)
    dense = np.zeros((n_out, n_in))
    for i in range(n_out):
        assert 0 <= lo[i] and lo[i] + w.shape[1] <= n_in
        dense[i, lo[i]:lo[i] + w.shape[1]] += w[i]
    ref = np.eye(n_in) if interp is None else _weights(interp, n_out, n_in)
    np.testing.assert_array_equal(dense, ref)


@needs_ext
@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
def test_kernel_reads_strided_pixels(interp):
    """The C loop gives the same bits on an RGBX buffer's RGB view, a BGR view and a contiguous copy,
    and equals resize + crop + mirror + normalize in numpy."""
    from mxref.ops.image.resample import resize
    rs = np.random.RandomState(interp)
    rgbx = rs.randint(0, 256, (11, 13, 4)).astype(np.uint8)
    mean, mult = np.array([1, 2, 3], np.float32), np.array([0.5, 0.25, 2], np.float32)
    outs = []
    for img in (rgbx[:, :, :3], np.ascontiguousarray(rgbx[:, :, :3]), rgbx[:, :, 2::-1][:, :, ::-1]):
        out = np.empty((3, 5, 6), np.float32)
        fast.crop_into(img, (8, 9), interp, 2, 1, True, mean, mult, out)
        outs.append(out)
    ref = resize(np.ascontiguousarray(rgbx[:, :, :3]), 9, 8, interp)[2:7, 1:7][:, ::-1]
    ref = ((ref.astype(np.float32) - mean) * mult).transpose(2, 0, 1)
    for out in outs:
        np.testing.assert_array_equal(out, ref)


# -- per-record draws --------------------------------------------------------------------------------

def test_draws_are_deterministic_and_in_range():
    """Same key, same draws; randint covers [a, b] inclusive; random() is in [0, 1)."""
    a, b = _Draws(12345), _Draws(12345)
    assert [a.randint(0, 9) for _ in range(50)] == [b.randint(0, 9) for _ in range(50)]
    d = _Draws(7)
    ints = [d.randint(2, 4) for _ in range(300)]
    assert set(ints) == {2, 3, 4}
    floats = [d.random() for _ in range(300)]
    assert 0 <= min(floats) < 0.1 and 0.9 < max(floats) < 1
    assert _Draws(1).randint(0, 1 << 30) != _Draws(2).randint(0, 1 << 30)


# -- whole epochs: fast path against the reference ---------------------------------------------------

@needs_ext
@pytest.mark.parametrize("kw", [dict(num_parts=3, part_index=1),
                                dict(num_parts=2, part_index=0, round_batch=False),
                                dict(shuffle=True, seed=4, rand_crop=True, rand_mirror=True,
                                     preprocess_threads=3),
                                dict(resize=10, round_batch=False, preprocess_threads=1)])
@pytest.mark.parametrize("stop_after", [None, 1])
def test_epochs_equal_reference(tmp_path, kw, stop_after):
    """Parts, round_batch on and off, shuffled random crops, and a reset after one batch of the
    first epoch: the fast path's batches are the reference's, bit for bit."""
    rec, idx = _pack(tmp_path)
    norm = dict(mean_r=1.0, mean_g=2.0, mean_b=3.0, std_r=2.0, std_g=4.0, std_b=8.0, scale=0.5)
    got = _epochs(rec, idx, False, stop_after=stop_after, **norm, **kw)
    _same(got, _epochs(rec, idx, True, stop_after=stop_after, **norm, **kw))


def test_parts_cover_the_records_once(tmp_path):
    """num_parts parts together hold every record once, in order (round_batch off)."""
    rec, idx = _pack(tmp_path)
    labels = []
    for k in range(3):
        for _, lab, pad in _epochs(rec, idx, False, epochs=1, num_parts=3, part_index=k, round_batch=False):
            labels += lab[:4 - pad].tolist()
    assert labels == [i % 3 for i in range(11)]


def _iter_threads():
    return {t for t in threading.enumerate() if t.name.startswith("ImageRecordIter")}


def _threads_gone(before, seconds=5.0):
    """Whether only the threads in ``before`` are left within ``seconds`` (a dropped iterator is
    collected by its producer thread when that one finishes the batch it is building)."""
    deadline = time.monotonic() + seconds
    while _iter_threads() - before and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.02)
    return not _iter_threads() - before


def test_bad_record_raises_in_next_and_leaves_no_threads(tmp_path):
    """A record that is no image raises MXNetError from next() (the decode thread's exception,
    with its traceback); close() and del leave no iterator thread running."""
    rec, idx = _pack(tmp_path, bad=(6,))
    before = _iter_threads()
    it = mx.io.ImageRecordIter(rec, (3, 6, 7), 4, path_imgidx=idx, preprocess_threads=2)
    it.next()
    with pytest.raises(mx.base.MXNetError, match="imdecode") as err:
        it.next()
    assert "_decode" in "".join(str(tb.name) for tb in err.traceback)
    it.close()
    assert _iter_threads() <= before                  # close() joins them
    it = mx.io.ImageRecordIter(rec, (3, 6, 7), 4, path_imgidx=idx, preprocess_threads=3)
    it.next()
    del it
    assert _threads_gone(before)


def test_process_one_record_as_reference(tmp_path):
    """``process`` (one record, the reference steps) gives the batch row and a 1-d float32 label."""
    rec, idx = _pack(tmp_path, n=4)
    it = mx.io.ImageRecordIter(rec, (3, 6, 7), 4, path_imgidx=idx, preprocess_threads=1)
    first = it.next()
    img, label = it.process(it._raw(1), it._rng(0, 1))
    it.close()
    np.testing.assert_array_equal(img, first.data[0].asnumpy()[1])
    assert label.dtype == np.float32 and label.tolist() == [1.0]
