"""Crafted NDArray files: every size is checked against the file's bytes before anything is allocated,
and every failure is an ``MXNetError`` naming the file, the array index and the field."""
import struct

import numpy as np
import pytest

import mxref as mx


def _file(*arrays: bytes, names=()) -> bytes:
    out = [struct.pack("<QQQ", 0x112, 0, len(arrays)), *arrays, struct.pack("<Q", len(names))]
    for n in names:
        out += [struct.pack("<Q", len(n)), n]
    return b"".join(out)


def _dense(shape, flag=0, data=b"", magic=0xF993FAC9):
    return (struct.pack("<Iii", magic, 0, len(shape)) + struct.pack(f"<{len(shape)}q", *shape)
            + struct.pack("<iii", 1, 0, flag) + data)


def _row_sparse(shape, nrows, flag=0, data=b"", idx=b""):
    return (struct.pack("<Iii", 0xF993FAC9, 1, 1) + struct.pack("<q", nrows)
            + struct.pack("<i", len(shape)) + struct.pack(f"<{len(shape)}q", *shape)
            + struct.pack("<iii", 1, 0, flag)
            + struct.pack("<ii", 6, 1) + struct.pack("<q", nrows)    # aux 0: int64 row ids
            + data + idx)


def _csr(shape, nnz, indptr, cols, flag=0, data=b""):
    return (struct.pack("<Iii", 0xF993FAC9, 2, 1) + struct.pack("<q", nnz)
            + struct.pack("<i", len(shape)) + struct.pack(f"<{len(shape)}q", *shape)
            + struct.pack("<iii", 1, 0, flag)
            + struct.pack("<ii", 6, 1) + struct.pack("<q", len(indptr))
            + struct.pack("<ii", 6, 1) + struct.pack("<q", len(cols))
            + data + struct.pack(f"<{len(indptr)}q", *indptr) + struct.pack(f"<{len(cols)}q", *cols))


def _load(tmp_path, blob):
    path = tmp_path / "crafted.params"
    path.write_bytes(blob)
    return mx.nd.load(path)


def test_crafted_files_are_valid_when_uncorrupted(tmp_path):
    """The builders above write real files: these load (so the failures below are the edits')."""
    vals = np.arange(6, dtype=np.float32)
    (a,) = _load(tmp_path, _file(_dense((2, 3), data=vals.tobytes())))
    assert a.asnumpy().tolist() == vals.reshape(2, 3).tolist()
    (rs,) = _load(tmp_path, _file(_row_sparse((4, 2), 1, data=vals[:2].tobytes(),
                                              idx=struct.pack("<q", 2))))
    assert rs.asnumpy()[2].tolist() == [0, 1] and rs.asnumpy().sum() == 1
    (c,) = _load(tmp_path, _file(_csr((2, 3), 1, [0, 1, 1], [2], data=vals[5:].tobytes())))
    assert c.asnumpy().tolist() == [[0, 0, 5], [0, 0, 0]]


@pytest.mark.parametrize("shape", [(-1, 4), (-2, -3), (3, -1)])
def test_negative_dimension_names_file_array_and_field(tmp_path, shape):
    with pytest.raises(mx.MXNetError, match=r"crafted\.params.*array 0 shape.*dimension.*-"):
        _load(tmp_path, _file(_dense(shape, data=b"\0" * 48)))


def test_shape_whose_product_overflows_int64_is_rejected(tmp_path):
    """2^32 * 2^32 wraps to 0 in int64: the old loader read zero bytes and reshaped (ValueError)."""
    with pytest.raises(mx.MXNetError, match=r"crafted\.params.*array 0 shape"):
        _load(tmp_path, _file(_dense((2 ** 32, 2 ** 32))))
    with pytest.raises(mx.MXNetError, match=r"crafted\.params.*array 0 shape"):
        _load(tmp_path, _file(_dense((0, 2 ** 62, 2 ** 62))))


def test_dense_size_larger_than_the_file_is_rejected_before_reading(tmp_path):
    with pytest.raises(mx.MXNetError, match=r"truncated while reading array 0 data"):
        _load(tmp_path, _file(_dense((1 << 20, 1 << 20))))


def test_huge_row_sparse_shape_in_a_tiny_file_does_not_allocate(tmp_path):
    """A 100-byte file declaring a (2^27, 2) float32 row_sparse array (1 GiB dense) loads as a
    row_sparse array with no rows: nothing of the dense size is allocated."""
    blob = _file(_row_sparse((1 << 27, 2), 0))
    assert len(blob) < 120
    before = mx.storage.stats()["bytes_in_use"]
    (a,) = _load(tmp_path, blob)
    assert a.stype == "row_sparse" and a.shape == (1 << 27, 2) and a.data.shape == (0, 2)
    assert mx.storage.stats()["bytes_in_use"] - before < 1 << 20


def test_huge_csr_shape_asks_for_no_terabytes(tmp_path):
    """A (1, 2^40) csr with no entries loads as csr: nothing of the dense size is allocated."""
    before = mx.storage.stats()["bytes_in_use"]
    (a,) = _load(tmp_path, _file(_csr((1, 1 << 40), 0, [0, 0], [])))
    assert a.stype == "csr" and a.shape == (1, 1 << 40) and a.data.shape == (0,)
    assert mx.storage.stats()["bytes_in_use"] - before < 1 << 20


def test_csr_indptr_must_match_rows_and_be_monotone(tmp_path):
    one = np.ones(1, np.float32).tobytes()
    with pytest.raises(mx.MXNetError, match=r"array 0.*indptr"):
        _load(tmp_path, _file(_csr((2, 3), 1, [0, 1], [2], data=one)))
    with pytest.raises(mx.MXNetError, match=r"array 0.*indptr"):
        _load(tmp_path, _file(_csr((2, 3), 1, [0, 2, 1], [2], data=one)))
    with pytest.raises(mx.MXNetError, match=r"array 0"):
        _load(tmp_path, _file(_csr((2,), 1, [0, 1, 1], [2], data=one)))


def test_row_sparse_bad_row_ids_are_mxneterror(tmp_path):
    two = np.ones(2, np.float32).tobytes()
    with pytest.raises(mx.MXNetError, match=r"array 0.*row"):
        _load(tmp_path, _file(_row_sparse((4, 2), 1, data=two, idx=struct.pack("<q", 9))))
    with pytest.raises(mx.MXNetError, match=r"array 0.*row"):
        _load(tmp_path, _file(_row_sparse((4, 2), 1, data=two, idx=struct.pack("<q", -9))))


def test_row_sparse_ids_must_be_sorted_and_unique(tmp_path):
    """A loaded row_sparse array is valid: unsorted or repeated row ids are refused by name."""
    four = np.ones(4, np.float32).tobytes()
    ids = struct.pack("<qq", 3, 1)
    blob = (struct.pack("<Iii", 0xF993FAC9, 1, 2) + struct.pack("<qq", 2, 2)
            + struct.pack("<i", 2) + struct.pack("<2q", 4, 2) + struct.pack("<iii", 1, 0, 0)
            + struct.pack("<ii", 6, 1) + struct.pack("<q", 2) + four + ids)
    with pytest.raises(mx.MXNetError, match=r"crafted\.params.*array 0 aux 0 \(row ids\).*sorted"):
        _load(tmp_path, _file(blob))


def test_second_array_errors_name_index_1(tmp_path):
    good = _dense((1,), data=b"\0" * 4)
    with pytest.raises(mx.MXNetError, match=r"array 1 shape"):
        _load(tmp_path, _file(good, _dense((-5,))))


def test_name_length_larger_than_the_file(tmp_path):
    blob = _file(_dense((1,), data=b"\0" * 4)) [:-8] + struct.pack("<QQ", 1, 1 << 60)
    with pytest.raises(mx.MXNetError, match=r"crafted\.params.*name 0"):
        _load(tmp_path, blob)
