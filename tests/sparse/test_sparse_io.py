"""Sparse arrays in mx.nd.save/load (MXNet's binary format): MXNet 1.9.1's files load as sparse
arrays with their values; ours are MXNet's bytes and load in MXNet."""
import os
import subprocess
import textwrap

import numpy as np
import pytest

import mxref as mx

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ndarray")
MXNET_PY = "/work/venvs/mxnet191/bin/python"


def _fixture(name):
    return os.path.join(FIXTURES, name)


def test_mxnet_written_sparse_cases_load_as_sparse():
    """Every case MXNet 1.9.1 wrote (no rows, 3-D rows, empty csr rows, all-zero csr) keeps its
    stype, dtype, shape and values."""
    arrays = mx.nd.load(_fixture("mxnet_sparse_cases.nd"))
    expected = np.load(_fixture("mxnet_sparse_cases.npz"))
    names = [k for k in expected.files if not k.endswith("__stype")]
    assert sorted(arrays) == sorted(names)
    for k in names:
        want = expected[k]
        got = arrays[k]
        assert got.stype == str(expected[f"{k}__stype"]), k
        assert got.dtype == want.dtype.type and got.shape == want.shape, k
        np.testing.assert_array_equal(got.asnumpy(), want)
        got.check_format()
    assert arrays["rsp_empty"].data.shape == (0, 2)
    assert arrays["rsp_f32"].indices.asnumpy().tolist() == [0, 4]
    assert arrays["csr_empty_rows"].indptr.asnumpy().tolist() == [0, 0, 2, 2, 3]


def test_saving_what_mxnet_wrote_gives_its_bytes():
    """Load then save reproduces MXNet's file byte for byte (sparse layout included)."""
    theirs = open(_fixture("mxnet_sparse_cases.nd"), "rb").read()
    assert mx.nd.save_tobuffer(mx.nd.load(_fixture("mxnet_sparse_cases.nd"))) == theirs


def test_sparse_round_trip_in_mxref(tmp_path):
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((5, 4)).astype(np.float64)
    dense[dense < 0.5] = 0
    data = {"c": mx.nd.array(dense, dtype=np.float64).tostype("csr"),
            "r": mx.nd.array(dense).tostype("row_sparse"),
            "z": mx.nd.sparse.zeros("row_sparse", (7, 3))}
    mx.nd.save(tmp_path / "s.nd", data)
    back = mx.nd.load(tmp_path / "s.nd")
    for k, v in data.items():
        assert back[k].stype == v.stype and back[k].dtype == v.dtype
        np.testing.assert_array_equal(back[k].asnumpy(), v.asnumpy())


def test_huge_declared_sparse_shape_allocates_nothing(tmp_path):
    """A row_sparse (2^40, 8) with no stored rows loads as sparse: nothing dense is made."""
    r = mx.nd.sparse.zeros("row_sparse", (1 << 40, 8))
    mx.nd.save(tmp_path / "h.nd", [r])
    assert os.path.getsize(tmp_path / "h.nd") < 200
    (back,) = mx.nd.load(tmp_path / "h.nd")
    assert back.stype == "row_sparse" and back.shape == (1 << 40, 8) and back.data.shape == (0, 8)


@pytest.mark.timeout(120)
@pytest.mark.skipif(not os.path.exists(MXNET_PY), reason="MXNet 1.9.1 venv not present")
def test_mxref_written_sparse_files_load_in_mxnet(tmp_path):
    """MXNet 1.9.1 reads mxref's sparse file with the same stypes and values."""
    dense = np.zeros((4, 6), np.float32)
    dense[1, 2], dense[3, 0], dense[3, 5] = 1, 2, 3
    rows = np.zeros((5, 2, 2), np.float64)
    rows[[0, 3]] = 7
    mx.nd.save(tmp_path / "ours.nd", {"csr": mx.nd.array(dense).tostype("csr"),
                                      "rsp": mx.nd.array(rows, dtype=np.float64).tostype("row_sparse")})
    np.savez(tmp_path / "want.npz", csr=dense, rsp=rows)
    script = textwrap.dedent(f"""
        import mxnet as mx, numpy as np
        got = mx.nd.load({str(tmp_path / 'ours.nd')!r})
        want = np.load({str(tmp_path / 'want.npz')!r})
        assert got['csr'].stype == 'csr' and got['rsp'].stype == 'row_sparse'
        assert got['rsp'].dtype == np.float64
        for k in ('csr', 'rsp'):
            np.testing.assert_array_equal(got[k].asnumpy(), want[k])
        assert got['rsp'].indices.asnumpy().tolist() == [0, 3]
        print('ok')
    """)
    proc = subprocess.run([MXNET_PY, "-c", script], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]
