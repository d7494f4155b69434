"""mx.nd.save/load in MXNet's binary format: files made by MXNet 1.9.1 load; ours load in MXNet;
bad files (truncated, wrong magic, wrong counts) raise MXNetError and the engine keeps working."""
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mxref as mx
from mxref.ndarray import io as ndio

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ndarray")
MXNET_PY = "/work/venvs/mxnet191/bin/python"
DTYPES = ["float16", "float32", "float64", "int8", "int32", "int64", "uint8"]


def _fixture(name):
    return os.path.join(FIXTURES, name)


def test_load_mxnet_list_file_every_dtype_and_empty():
    """A list file written by MXNet 1.9.1 (7 dtypes and a (0, 3) array) loads with exact values."""
    arrays = mx.nd.load(_fixture("mxnet_list.nd"))
    expected = np.load(_fixture("mxnet_list.npz"))
    assert isinstance(arrays, list) and len(arrays) == len(expected.files) == 8
    for i, arr in enumerate(arrays):
        want = expected[f"arr_{i}"]
        assert arr.dtype == want.dtype.type and arr.shape == want.shape
        np.testing.assert_array_equal(arr.asnumpy(), want)
    assert {a.asnumpy().dtype.name for a in arrays} == set(DTYPES)


def test_load_mxnet_dict_and_single_array_files():
    """A checkpoint-style dict keeps its 'arg:'/'aux:' names; a single saved array is a 1-list."""
    params = mx.nd.load(_fixture("mxnet_dict.params"))
    expected = np.load(_fixture("mxnet_dict.npz"))
    assert sorted(params) == sorted(expected.files) == ["arg:fc_bias", "arg:fc_weight", "aux:bn_moving_var"]
    for k in params:
        np.testing.assert_array_equal(params[k].asnumpy(), expected[k])
    single = mx.nd.load(_fixture("mxnet_single.nd"))
    assert len(single) == 1 and single[0].dtype == np.uint8 and single[0].shape == (2, 2, 2)


def test_mxnet_sparse_arrays_load_with_their_values():
    """row_sparse and csr arrays saved by MXNet 1.9.1 come back sparse, with their values."""
    rows, csr = mx.nd.load(_fixture("mxnet_sparse.nd"))
    assert (rows.stype, csr.stype) == ("row_sparse", "csr")
    assert rows.dtype == np.float32 and rows.shape == (4, 3)
    np.testing.assert_array_equal(rows.asnumpy(), [[0, 0, 0], [1, 2, 3], [0, 0, 0], [4, 5, 6]])
    assert csr.dtype == np.float64
    np.testing.assert_array_equal(csr.asnumpy(), [[0, 7, 0], [0, 0, 0], [8, 0, 9]])


def test_saved_bytes_match_mxnet_files_exactly(tmp_path):
    """Saving the same arrays reproduces MXNet's file byte for byte."""
    mxnet_bytes = open(_fixture("mxnet_list.nd"), "rb").read()
    expected = np.load(_fixture("mxnet_list.npz"))
    arrays = [mx.nd.array(expected[f"arr_{i}"], dtype=expected[f"arr_{i}"].dtype) for i in range(8)]
    mx.nd.save(tmp_path / "ours.nd", arrays)
    assert (tmp_path / "ours.nd").read_bytes() == mxnet_bytes
    params = mx.nd.load(_fixture("mxnet_dict.params"))
    assert ndio.save_tobuffer(params) == open(_fixture("mxnet_dict.params"), "rb").read()


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_list_dict_and_zero_d(tmp_path, dtype):
    rng = np.random.default_rng(3)
    host = (rng.standard_normal((3, 4)) * 50).astype(dtype)
    a = mx.nd.array(host, dtype=dtype)
    mx.nd.save(tmp_path / "l.nd", [a, a[1:2]])
    back = mx.nd.load(tmp_path / "l.nd")
    np.testing.assert_array_equal(back[0].asnumpy(), host)
    np.testing.assert_array_equal(back[1].asnumpy(), host[1:2])
    mx.nd.save(str(tmp_path / "d.nd"), {"w": a, "ünïcode": a})
    assert sorted(mx.nd.load(str(tmp_path / "d.nd"))) == ["w", "ünïcode"]
    blob = ndio.save_tobuffer([mx.nd.array(np.array(7, dtype=dtype), dtype=dtype)])
    (zero_d,) = mx.nd.load_frombuffer(blob)    # 0-d arrays travel in MXNet's V3 layout
    assert zero_d.shape == () and zero_d.asscalar() == 7


def test_save_waits_for_pending_writes_and_raises_their_errors(tmp_path):
    a = mx.nd.zeros((3,))
    a += 5
    mx.nd.save(tmp_path / "p.nd", a)
    assert mx.nd.load(tmp_path / "p.nd")[0].asnumpy().tolist() == [5, 5, 5]


def test_legacy_v1_and_oldest_layouts_load():
    """Pre-V2 files (V1 magic with int64 dims; the oldest with ndim first and uint32 dims) load."""
    body = np.arange(6, dtype=np.float32)
    head = struct.pack("<QQQ", 0x112, 0, 2)
    v1 = struct.pack("<Ii2q", ndio.V1_MAGIC, 2, 2, 3) + struct.pack("<iii", 1, 0, 0) + body.tobytes()
    old = struct.pack("<I2I", 2, 3, 2) + struct.pack("<iii", 1, 0, 0) + body.tobytes()
    a, b = mx.nd.load_frombuffer(head + v1 + old + struct.pack("<Q", 0))
    assert a.shape == (2, 3) and b.shape == (3, 2)
    np.testing.assert_array_equal(a.asnumpy().ravel(), body)
    np.testing.assert_array_equal(b.asnumpy().ravel(), body)


def _good_bytes():
    return open(_fixture("mxnet_dict.params"), "rb").read()


@pytest.mark.parametrize("cut", [0, 7, 16, 20, 30, 60, 120, -1])
def test_truncated_files_raise_mxneterror(tmp_path, cut):
    blob = _good_bytes()
    path = tmp_path / "cut.params"
    path.write_bytes(blob[:cut] if cut >= 0 else blob[:-1])
    with pytest.raises(mx.MXNetError, match="Invalid NDArray file format.*truncated"):
        mx.nd.load(path)


def test_corrupt_files_raise_mxneterror_and_the_engine_keeps_working(tmp_path):
    blob = bytearray(_good_bytes())
    bad_magic = bytes(struct.pack("<Q", 0x113)) + bytes(blob[8:])
    with pytest.raises(mx.MXNetError, match="magic 0x113"):
        mx.nd.load_frombuffer(bad_magic)
    bad_array_magic = bytearray(blob)
    bad_array_magic[24:28] = struct.pack("<I", 0xDEADBEEF)
    with pytest.raises(mx.MXNetError, match="unknown magic 0xDEADBEEF"):
        mx.nd.load_frombuffer(bytes(bad_array_magic))
    bad_dtype = bytearray(blob)
    bad_dtype[24 + 4 + 4 + 4 + 16 + 8:24 + 4 + 4 + 4 + 16 + 12] = struct.pack("<i", 99)
    with pytest.raises(mx.MXNetError, match="dtype flag 99"):
        mx.nd.load_frombuffer(bytes(bad_dtype))
    with pytest.raises(mx.MXNetError, match="trailing bytes"):
        mx.nd.load_frombuffer(bytes(blob) + b"x")
    bad_stype = bytearray(blob)
    bad_stype[28:32] = struct.pack("<i", 5)
    with pytest.raises(mx.MXNetError, match="storage type 5"):
        mx.nd.load_frombuffer(bytes(bad_stype))
    with pytest.raises(mx.MXNetError, match="cannot read"):
        mx.nd.load(tmp_path / "missing.nd")
    with pytest.raises(mx.MXNetError, match="must be an NDArray"):
        mx.nd.save(tmp_path / "x.nd", [np.ones(2)])
    with pytest.raises(mx.MXNetError, match="keys must be strings"):
        mx.nd.save(tmp_path / "x.nd", {1: mx.nd.ones(2)})
    assert (mx.nd.ones((2,)) + 1).asnumpy().tolist() == [2, 2]


@pytest.mark.skipif(not os.path.exists(MXNET_PY), reason="MXNet 1.9.1 venv not present")
def test_mxnet_loads_what_mxref_saves(tmp_path):
    """Cross-check in a subprocess: MXNet 1.9.1 reads our list and dict files with exact values."""
    rng = np.random.default_rng(5)
    data = {f"a_{d}": (rng.standard_normal((2, 3)) * 20).astype(d) for d in DTYPES}
    mx.nd.save(tmp_path / "ours.params", {k: mx.nd.array(v, dtype=v.dtype) for k, v in data.items()})
    np.savez(tmp_path / "want.npz", **data)
    script = textwrap.dedent(f"""
        import mxnet as mx, numpy as np
        got = mx.nd.load({str(tmp_path / 'ours.params')!r})
        want = np.load({str(tmp_path / 'want.npz')!r})
        assert sorted(got) == sorted(want.files), (sorted(got), want.files)
        for k in got:
            g = got[k].asnumpy()
            assert g.dtype == want[k].dtype and np.array_equal(g, want[k]), k
        print("OK", len(got))
    """)
    proc = subprocess.run([MXNET_PY, "-c", script], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0 and "OK 7" in proc.stdout, proc.stderr[-2000:]


def test_module_runs_standalone():
    """The io module is importable on its own (no hidden import-order dependency)."""
    proc = subprocess.run([sys.executable, "-c", "import mxref.ndarray.io as m; print(m.LIST_MAGIC)"],
                          capture_output=True, text=True, timeout=60,
                          cwd=os.path.join(os.path.dirname(__file__), "..", ".."))
    assert proc.stdout.strip() == "274", proc.stderr


def test_np_shape_save_load_semantics(tmp_path):
    """Under np_shape every array is saved in V3 (0-d and zero-size included) and must be loaded
    under it; a legacy (V2) file is refused under a thread-local np_shape (MXNet's rules)."""
    import mxref as mx
    fname = str(tmp_path / "arrays")
    with mx.np_shape(True):
        arrays = [mx.nd.array(np.arange(6).reshape(2, 3)), mx.nd.array(np.array(7.0)), mx.nd.zeros((0, 4))]
        mx.nd.save(fname, arrays)
        back = mx.nd.load(fname)
        assert [a.shape for a in back] == [(2, 3), (), (0, 4)]
        np.testing.assert_array_equal(back[0].asnumpy(), arrays[0].asnumpy())
        with pytest.raises(mx.MXNetError, match="saved under NumPy shape semantics"):
            with mx.np_shape(False):
                mx.nd.load(fname)
        with pytest.raises(mx.MXNetError, match="default storage"):
            mx.nd.save(fname + "2", [mx.nd.zeros((2, 2)).tostype("csr")])
    mx.nd.save(fname, [mx.nd.ones((2,))])
    with mx.np_shape(True):
        with pytest.raises(mx.MXNetError, match="not saved under NumPy shape semantics"):
            mx.nd.load(fname)
    try:
        mx.util.set_np_shape(2)       # the global switch may read legacy files
        assert mx.nd.load(fname)[0].shape == (2,)
    finally:
        mx.util.set_np_shape(0)
    mx.nd.save(fname, [mx.nd.array(np.array(3.0))])     # legacy mode: a 0-d array still round-trips
    assert mx.nd.load(fname)[0].shape == ()
