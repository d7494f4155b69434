"""python -m mxref.tools.im2rec: MXNet's .lst format and list splits, packing readable by both ways."""
import os
import shutil
import subprocess
import sys

import numpy as np

import mxref as mx
from mxref.tools import im2rec

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "image", "im2rec")
ROOT = os.path.join(FIX, "images")


def test_list_equals_mxnet_list(tmp_path):
    """--list --recursive --no-shuffle writes the very .lst MXNet's tool wrote for the fixture."""
    assert im2rec.main([str(tmp_path / "data"), ROOT, "--list", "--recursive", "--no-shuffle"]) == 0
    assert (tmp_path / "data.lst").read_text() == open(os.path.join(FIX, "mxnet.lst")).read()


def test_list_shuffle_and_splits(tmp_path):
    """--shuffle (the default, seed 100) permutes; ratios write _train/_val/_test; --exts filters."""
    im2rec.main([str(tmp_path / "s"), ROOT, "--list", "--recursive"])
    lines = (tmp_path / "s.lst").read_text().splitlines()
    assert sorted(lines) == sorted(open(os.path.join(FIX, "mxnet.lst")).read().splitlines())
    im2rec.main([str(tmp_path / "p"), ROOT, "--list", "--recursive", "--train-ratio", "0.5",
                 "--test-ratio", "0.2"])
    sizes = {k: len((tmp_path / f"p_{k}.lst").read_text().splitlines()) for k in ("train", "val", "test")}
    assert sizes == {"train": 3, "val": 2, "test": 1}
    im2rec.main([str(tmp_path / "j"), ROOT, "--list", "--recursive", "--exts", ".jpg"])
    assert all(ln.endswith(".jpg") for ln in (tmp_path / "j.lst").read_text().splitlines())


def test_pack_round_trip(tmp_path):
    """Packing the fixture list (PNG, lossless, 2 threads) gives records equal to the source pixels,
    ids and labels, in list order; --resize scales the shorter edge; --center-crop squares."""
    shutil.copy(os.path.join(FIX, "mxnet.lst"), tmp_path / "data.lst")
    assert im2rec.main([str(tmp_path / "data"), ROOT, "--encoding", ".png", "--num-thread", "2"]) == 0
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "data.idx"), str(tmp_path / "data.rec"), "r")
    dec = np.load(os.path.join(FIX, "decoded.npz"))
    assert rec.keys == list(range(6))
    for k in rec.keys:
        header, img = mx.recordio.unpack_img(rec.read_idx(k))
        assert header.id == k and header.label == dec["labels"][k]
        if k % 3 != 1:                                        # the PNG sources are lossless
            np.testing.assert_array_equal(img[..., ::-1], dec["rgb"][k])
    (tmp_path / "r.lst").write_text("0\t1.000000\t2.000000\tcat/cat0.png\n")
    im2rec.main([str(tmp_path / "r"), ROOT, "--resize", "4", "--center-crop", "--pack-label",
                 "--quality", "90"])
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "r.idx"), str(tmp_path / "r.rec"), "r")
    header, img = mx.recordio.unpack_img(rec.read_idx(0))
    assert img.shape == (4, 4, 3) and list(header.label) == [1.0, 2.0]


def test_reads_mxnet_packed_records():
    """MXNet 1.9.1's .rec/.idx decode to the pixels MXNet decodes (decoded.npz)."""
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(FIX, "mxnet.idx"), os.path.join(FIX, "mxnet.rec"), "r")
    dec = np.load(os.path.join(FIX, "decoded.npz"))
    for k in rec.keys:
        header, payload = mx.recordio.unpack(rec.read_idx(k))
        assert header.label == dec["labels"][k] and header.id == k
        np.testing.assert_array_equal(mx.image.imdecode(payload).asnumpy(), dec["rgb"][k])


def test_command_line(tmp_path):
    """The module runs as a program and says when no list matches."""
    here = os.path.join(os.path.dirname(__file__), "..", "..")
    r = subprocess.run([sys.executable, "-m", "mxref.tools.im2rec", str(tmp_path / "none"), ROOT],
                       capture_output=True, text=True, cwd=here, timeout=60)
    assert r.returncode == 1 and "Did not find" in r.stdout
