"""RecordIO: MXNet 1.9.1's files read here, files written here are byte-identical to MXNet's and read by
MXNet itself; record splitting at the magic number, index files, IRHeader pack/unpack, errors."""
import json
import os
import pickle
import struct
import subprocess

import numpy as np
import pytest

import mxref.recordio as recordio
from mxref import MXNetError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "io")
MXNET_PYTHON = "/work/venvs/mxnet191/bin/python"
MAGIC = struct.pack("<I", 0xCED7230A)

with open(os.path.join(FIXTURES, "mxnet191_records.json")) as _f:
    EXPECTED = json.load(_f)
PAYLOADS = [bytes.fromhex(h) for h in EXPECTED["payloads"]]
KEYS = [i * 10 for i in range(len(PAYLOADS))]   # make_recordio_fixture.py: write_idx(i * 10, ...)


def _fixture(name):
    return os.path.join(FIXTURES, name)


def test_reads_mxnet_file_sequentially():
    """Every record MXNet 1.9.1 wrote comes back, in order, then None at the end of the file."""
    rec = recordio.MXRecordIO(_fixture("mxnet191.rec"), "r")
    got = [rec.read() for _ in PAYLOADS]
    assert got == PAYLOADS
    assert rec.read() is None
    rec.reset()
    assert rec.read() == PAYLOADS[0]
    rec.close()


def test_reads_mxnet_file_by_key():
    """The index MXNet wrote gives keys in write order and random access by key."""
    rec = recordio.MXIndexedRecordIO(_fixture("mxnet191.idx"), _fixture("mxnet191.rec"), "r")
    assert rec.keys == KEYS
    assert [rec.idx[k] for k in KEYS] == EXPECTED["offsets"]
    for k in reversed(KEYS):
        assert rec.read_idx(k) == PAYLOADS[k // 10]
    with pytest.raises(MXNetError, match="no record with key 7"):
        rec.read_idx(7)
    rec.close()


def test_writes_bytes_identical_to_mxnet(tmp_path):
    """Writing the same payloads gives the same .rec bytes, .idx text and tell() offsets as MXNet."""
    rec = recordio.MXIndexedRecordIO(str(tmp_path / "a.idx"), str(tmp_path / "a.rec"), "w")
    offsets = []
    for k, p in zip(KEYS, PAYLOADS):
        offsets.append(rec.tell())
        rec.write_idx(k, p)
    rec.close()
    assert offsets == EXPECTED["offsets"]
    with open(_fixture("mxnet191.rec"), "rb") as f:
        assert (tmp_path / "a.rec").read_bytes() == f.read()
    with open(_fixture("mxnet191.idx")) as f:
        assert (tmp_path / "a.idx").read_text() == f.read()


def _parts(path):
    """(cflag, length) of every stored part, parsed independently of the reader under test."""
    raw, out, pos = open(path, "rb").read(), [], 0
    while pos < len(raw):
        magic, lrec = struct.unpack_from("<II", raw, pos)
        assert magic == 0xCED7230A
        length = lrec & ((1 << 29) - 1)
        out.append((lrec >> 29, length))
        pos += 8 + (length + 3) // 4 * 4
    return out


@pytest.mark.parametrize("payload,parts", [
    (b"abcde", [(0, 5)]),
    (MAGIC, [(1, 0), (3, 0)]),
    (b"head" + MAGIC + b"mid!" + MAGIC + b"z", [(1, 4), (2, 4), (3, 1)]),
    (b"x" + MAGIC + b"yz", [(0, 7)]),                     # not 4-byte aligned: not cut
])
def test_magic_in_payload_splits_record(tmp_path, payload, parts):
    """An aligned magic number inside a payload cuts it into parts (cflag 1, 2, 3); reading joins them."""
    path = str(tmp_path / "m.rec")
    with recordio.MXRecordIO(path, "w") as rec:
        rec.write(payload)
        rec.write(b"next")
    assert _parts(path) == parts + [(0, 4)]
    rec = recordio.MXRecordIO(path, "r")
    assert rec.read() == payload and rec.read() == b"next" and rec.read() is None


def test_pack_unpack_headers():
    """pack stores a scalar label in the header, an array label after it with flag = its length."""
    h, s = recordio.unpack(recordio.pack(recordio.IRHeader(9, 3.5, 17, 0), b"img"))
    assert h == recordio.IRHeader(0, 3.5, 17, 0) and s == b"img"
    packed = recordio.pack(recordio.IRHeader(0, [1.0, 2.0, 0.25], 18, 5), b"\x00\x01")
    assert packed == PAYLOADS[13]   # byte-identical to MXNet's pack
    h, s = recordio.unpack(packed)
    want = EXPECTED["unpacked_13"]
    assert (h.flag, h.id, h.id2, s.hex()) == (want["flag"], want["id"], want["id2"], want["rest"])
    assert h.label.dtype == np.float32 and h.label.tolist() == want["label"]
    with pytest.raises(MXNetError, match="at least 24 header bytes"):
        recordio.unpack(b"short")


def test_bad_files_raise(tmp_path):
    """A file that is not RecordIO, or ends mid-record, raises MXNetError naming the file."""
    bad = tmp_path / "bad.rec"
    bad.write_bytes(b"\x00" * 16)
    with pytest.raises(MXNetError, match="bad magic"):
        recordio.MXRecordIO(str(bad), "r").read()
    cut = tmp_path / "cut.rec"
    cut.write_bytes(open(_fixture("mxnet191.rec"), "rb").read()[:30])
    rec = recordio.MXRecordIO(str(cut), "r")
    with pytest.raises(MXNetError, match="truncated"):
        for _ in range(5):
            rec.read()
    with pytest.raises(MXNetError, match="cannot open"):
        recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    with pytest.raises(ValueError, match="Invalid flag"):
        recordio.MXRecordIO(str(tmp_path / "x.rec"), "a")


def _records(*heads_and_payloads):
    return b"".join(struct.pack("<II", 0xCED7230A, cflag << 29 | len(p)) + p + b"\0" * (-len(p) % 4)
                    for cflag, p in heads_and_payloads)


@pytest.mark.parametrize("cflag", [4, 5, 7])
def test_invalid_cflag_is_rejected(tmp_path, cflag):
    """cflag is 0..3; the old reader treated 4..7 as 'more parts follow' and glued records together."""
    path = tmp_path / "cflag.rec"
    path.write_bytes(_records((cflag, b"abcd"), (0, b"efgh")))
    with pytest.raises(MXNetError, match=rf"cflag.rec.*invalid cflag {cflag} .*offset 0"):
        recordio.MXRecordIO(str(path), "r").read()


@pytest.mark.parametrize("parts, offset", [([(2, b"ab")], 0), ([(3, b"ab")], 0),
                                           ([(1, b"ab"), (0, b"cd")], 12), ([(1, b"ab"), (1, b"cd")], 12)])
def test_multi_part_records_must_be_well_formed(tmp_path, parts, offset):
    path = tmp_path / "parts.rec"
    path.write_bytes(_records(*parts))
    with pytest.raises(MXNetError, match=rf"parts.rec.*cflag .* at offset {offset}"):
        recordio.MXRecordIO(str(path), "r").read()


def test_truncated_final_record_is_reported(tmp_path):
    """A multi-part record whose last part is missing: the old reader said 'truncated record header'."""
    path = tmp_path / "final.rec"
    path.write_bytes(_records((0, b"whole"), (1, b"ab"), (2, b"cd")))
    rec = recordio.MXRecordIO(str(path), "r")
    assert rec.read() == b"whole"
    with pytest.raises(MXNetError, match=r"final.rec.*truncated final record at offset 16.*2 part"):
        rec.read()


def test_record_length_beyond_the_file_is_rejected_before_reading(tmp_path):
    path = tmp_path / "long.rec"
    path.write_bytes(struct.pack("<II", 0xCED7230A, (1 << 29) - 1))
    with pytest.raises(MXNetError, match=r"long.rec.*truncated record payload at offset 0 .*0 left"):
        recordio.MXRecordIO(str(path), "r").read()


def test_label_count_beyond_the_record_and_bad_index_lines(tmp_path):
    s = recordio.pack(recordio.IRHeader(0, 1.0, 0, 0), b"")
    bad = struct.pack("<I", 1000) + s[4:]
    with pytest.raises(MXNetError, match="1000 float32 labels"):
        recordio.unpack(bad)
    (tmp_path / "x.rec").write_bytes(b"")
    (tmp_path / "x.idx").write_text("0\t0\n1\tabc\n")
    with pytest.raises(MXNetError, match=r"x.idx.*line 2"):
        recordio.MXIndexedRecordIO(str(tmp_path / "x.idx"), str(tmp_path / "x.rec"), "r")
    (tmp_path / "x.idx").write_text("0\t0\n1\t4096\n")
    (tmp_path / "x.rec").write_bytes(_records((0, b"abcd")))
    rec = recordio.MXIndexedRecordIO(str(tmp_path / "x.idx"), str(tmp_path / "x.rec"), "r")
    assert rec.read_idx(0) == b"abcd"
    with pytest.raises(MXNetError, match=r"x.idx.*key 1 at offset 4096, past the end of .*x.rec"):
        rec.read_idx(1)


def test_mode_and_closed_checks(tmp_path):
    """Reading a writer, writing a reader or using a closed file raise MXNetError; reset truncates."""
    path = str(tmp_path / "w.rec")
    rec = recordio.MXRecordIO(path, "w")
    rec.write(b"abc")
    with pytest.raises(MXNetError, match="open for writing"):
        rec.read()
    rec.reset()                  # write mode: reopen empties the file
    rec.close()
    assert os.path.getsize(path) == 0
    with pytest.raises(MXNetError, match="closed"):
        rec.write(b"x")
    rec = recordio.MXRecordIO(path, "r")
    with pytest.raises(MXNetError, match="open for reading"):
        rec.write(b"x")


def test_pickle_reopens_reader():
    """A pickled reader reopens its file from the start in the unpickling process."""
    rec = recordio.MXIndexedRecordIO(_fixture("mxnet191.idx"), _fixture("mxnet191.rec"), "r")
    rec.read()
    clone = pickle.loads(pickle.dumps(rec))
    assert clone.read() == PAYLOADS[0] and clone.read_idx(130) == PAYLOADS[13]
    assert rec.read() == PAYLOADS[1]   # the original keeps its place


def test_image_records_need_an_image_library():
    """pack_img/unpack_img round-trip with OpenCV or Pillow, and say which to install otherwise."""
    try:
        recordio._image_codec()
    except MXNetError as exc:
        assert "opencv" in str(exc).lower() and "pillow" in str(exc).lower()
        with pytest.raises(MXNetError):
            recordio.pack_img(recordio.IRHeader(0, 1.0, 0, 0), np.zeros((4, 4, 3), np.uint8))
        return
    img = (np.arange(48).reshape(4, 4, 3) * 5).astype(np.uint8)
    h, back = recordio.unpack_img(recordio.pack_img(recordio.IRHeader(0, 2.0, 7, 0), img,
                                                    img_fmt=".png"))
    assert h.label == 2.0 and h.id == 7
    np.testing.assert_array_equal(back, img)


_MXNET_READ = """
import json, sys
import mxnet as mx
d = json.loads(sys.stdin.read())
rec = mx.recordio.MXIndexedRecordIO(d["idx"], d["rec"], "r")
print(json.dumps({"keys": rec.keys, "payloads": [rec.read_idx(k).hex() for k in rec.keys]}))
"""


def test_mxnet_reads_file_written_by_mxref(tmp_path):
    """MXNet 1.9.1 (in a subprocess) reads mxref's .rec/.idx, including split records."""
    if not os.path.exists(MXNET_PYTHON):
        pytest.skip("MXNet 1.9.1 is not installed")
    payloads = PAYLOADS + [MAGIC * 3, os.urandom(1001)]
    rec = recordio.MXIndexedRecordIO(str(tmp_path / "b.idx"), str(tmp_path / "b.rec"), "w")
    for i, p in enumerate(payloads):
        rec.write_idx(i, p)
    rec.close()
    done = subprocess.run([MXNET_PYTHON, "-c", _MXNET_READ], capture_output=True, text=True,
                          input=json.dumps({"idx": str(tmp_path / "b.idx"),
                                            "rec": str(tmp_path / "b.rec")}), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["keys"] == list(range(len(payloads)))
    assert [bytes.fromhex(h) for h in seen["payloads"]] == payloads
