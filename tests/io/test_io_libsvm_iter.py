"""LibSVMIter: CSR batches of a hand-written file, round_batch as MXNet 1.9.1, byte-range shards
that cover the file exactly once, streaming in small chunks, and errors naming file and line."""
import numpy as np
import pytest

import mxref as mx
import mxref.io  # noqa: F401 - registers mx.io
from mxref import MXNetError
from mxref.io.libsvm_reader import iter_part, parse_chunk, part_bytes

FILE = "1 0:1.5 3:2\n0 1:0.5\n1\n0 2:1 4:3.25 9:1\n1 5:2\n"
DENSE = np.array([[1.5, 0, 0, 2, 0, 0, 0, 0, 0, 0],
                  [0, 0.5, 0, 0, 0, 0, 0, 0, 0, 0],
                  [0] * 10,
                  [0, 0, 1, 0, 3.25, 0, 0, 0, 0, 1],
                  [0, 0, 0, 0, 0, 2, 0, 0, 0, 0]], np.float32)
LABELS = [1, 0, 1, 0, 1]


@pytest.fixture
def svm(tmp_path):
    path = tmp_path / "a.libsvm"
    path.write_text(FILE)
    return str(path)


def _dense(chunk, ncol):
    out = np.zeros((len(chunk.indptr) - 1, ncol), np.float32)
    for r in range(len(chunk.indptr) - 1):
        lo, hi = chunk.indptr[r], chunk.indptr[r + 1]
        out[r, chunk.indices[lo:hi]] = chunk.data[lo:hi]
    return out


def _epoch(it):
    out = []
    while True:
        try:
            data, _, pad = it.next_csr()
        except StopIteration:
            return out
        out.append((_dense(data, 10), data.labels.tolist(), pad))


def test_parse_chunk_csr_triple():
    """One block parses into labels, data, indices, indptr with an empty row kept empty."""
    c = parse_chunk(FILE.encode(), 10)
    assert c.labels.tolist() == LABELS
    assert c.indptr.tolist() == [0, 2, 3, 3, 6, 7]
    assert c.indices.tolist() == [0, 3, 1, 2, 4, 9, 5]
    assert c.data.dtype == np.float32 and c.indices.dtype == np.int64
    np.testing.assert_array_equal(_dense(c, 10), DENSE)


def test_round_batch_matches_mxnet(svm):
    """MXNet 1.9.1, batch 2: three batches, the last wraps to row 0 (pad 1); the next epoch
    starts after the wrapped row (its first batch is rows 1, 2)."""
    it = mx.io.LibSVMIter(data_libsvm=svm, data_shape=(10,), batch_size=2)
    assert it.provide_data[0].shape == (2, 10) and it.provide_data[0].stype == "csr"
    assert it.provide_label[0].shape == (2,)
    ep = _epoch(it)
    assert [(lab, pad) for _, lab, pad in ep] == [([1, 0], 0), ([1, 0], 0), ([1, 1], 1)]
    np.testing.assert_array_equal(np.concatenate([d for d, _, _ in ep]), np.concatenate([DENSE, DENSE[:1]]))
    it.reset()
    ep2 = _epoch(it)
    assert [lab for _, lab, _ in ep2] == [[0, 1], [0, 1]]
    np.testing.assert_array_equal(ep2[0][0], DENSE[1:3])


def test_no_round_batch_pads_with_empty_rows(svm):
    """round_batch=False: the last batch is completed with empty rows, every epoch from row 0."""
    it = mx.io.LibSVMIter(data_libsvm=svm, data_shape=(10,), batch_size=2, round_batch=False)
    for _ in range(2):
        ep = _epoch(it)
        assert [pad for _, _, pad in ep] == [0, 0, 1]
        np.testing.assert_array_equal(ep[2][0], np.concatenate([DENSE[4:], np.zeros((1, 10))]))
        it.reset()


@pytest.mark.parametrize("num_parts", [1, 2, 3, 4, 7])
def test_shards_cover_each_line_once(tmp_path, num_parts):
    """Byte-range shards cut on line boundaries: together they hold every line exactly once."""
    rng = np.random.default_rng(num_parts)
    lines = [f"{i} " + " ".join(f"{j}:1" for j in sorted(rng.choice(50, rng.integers(0, 9), False)))
             for i in range(53)]
    path = tmp_path / "s.libsvm"
    path.write_text("\n".join(lines) + "\n")
    seen = []
    for p in range(num_parts):
        begin, end = part_bytes(str(path), num_parts, p)
        assert begin <= end
        for c in iter_part(str(path), 50, num_parts, p, chunk_bytes=64):
            seen.extend(c.labels.astype(int).tolist())
    assert seen == list(range(53))


def test_iter_shard_and_small_chunks(svm):
    """The iterator's part_index/num_parts and a tiny read window give the same rows."""
    rows = []
    for p in range(2):
        it = mx.io.LibSVMIter(data_libsvm=svm, data_shape=(10,), batch_size=1, num_parts=2,
                              part_index=p, chunk_bytes=5)
        rows += [d for d, _, _ in _epoch(it)]
    np.testing.assert_array_equal(np.concatenate(rows), DENSE)


def test_label_libsvm(tmp_path, svm):
    """label_libsvm: labels are a second LibSVM file read as CSR rows of label_shape."""
    lab = tmp_path / "l.libsvm"
    lab.write_text("0 0:1 2:1\n0 1:1\n0\n0 2:4\n0 0:2\n")
    it = mx.io.LibSVMIter(data_libsvm=svm, data_shape=(10,), label_libsvm=str(lab),
                          label_shape=(3,), batch_size=5)
    assert it.provide_label[0].shape == (5, 3) and it.provide_label[0].stype == "csr"
    _, label, pad = it.next_csr()
    assert pad == 0
    np.testing.assert_array_equal(_dense(label, 3), [[1, 0, 1], [0, 1, 0], [0, 0, 0], [0, 0, 4], [2, 0, 0]])


@pytest.mark.parametrize("text,needle", [
    ("1 0:1\n0 12:1\n", "line 2: feature index 12 is outside [0, 10)"),
    ("1 0:1\n1 2:1\n0 3-1\n", "line 3: bad entry '3-1'"),
    ("1 0:1\nx 1:1\n", "line 2: label 'x' is not a number"),
    ("1 0:1\n1 a:2\n", "line 2: bad entry 'a:2'"),
    ("1 0:1\n1 1.5:2\n", "line 2: bad entry '1.5:2'"),
])
def test_malformed_rows_name_file_and_line(tmp_path, text, needle):
    """A bad row fails with MXNetError naming the file and its line."""
    path = tmp_path / "bad.libsvm"
    path.write_text(text)
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(10,), batch_size=4)
    with pytest.raises(MXNetError, match="bad.libsvm") as err:
        it.next_csr()
    assert needle in str(err.value)


def test_line_number_counts_lines_before_the_chunk(tmp_path):
    """An error deep in a streamed file names its line in the whole file, not in the chunk."""
    path = tmp_path / "long.libsvm"
    path.write_text("1 0:1\n" * 1000 + "1 10:1\n")
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(10,), batch_size=2000, chunk_bytes=100)
    with pytest.raises(MXNetError, match="line 1001: feature index 10"):
        it.next_csr()


def test_bad_arguments(svm):
    with pytest.raises(MXNetError, match="does not exist"):
        mx.io.LibSVMIter(data_libsvm=svm + ".nope", data_shape=(10,), batch_size=2)
    with pytest.raises(MXNetError, match="part_index"):
        mx.io.LibSVMIter(data_libsvm=svm, data_shape=(10,), batch_size=2, num_parts=2, part_index=2)
    with pytest.raises(MXNetError, match="round_batch needs"):
        mx.io.LibSVMIter(data_libsvm=svm, data_shape=(10,), batch_size=20).next_csr()


def test_batches_are_csr_ndarrays(tmp_path, svm):
    """next(it) gives a DataBatch whose data is a CSRNDArray and whose label is dense (or csr with
    label_libsvm), as MXNet's LibSVMIter."""
    it = mx.io.LibSVMIter(data_libsvm=svm, data_shape=(10,), batch_size=3)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 1]
    x = batches[0].data[0]
    assert x.stype == "csr" and x.shape == (3, 10)
    np.testing.assert_array_equal(x.asnumpy(), DENSE[:3])
    assert x.indptr.asnumpy().tolist() == [0, 2, 3, 3]
    np.testing.assert_array_equal(batches[1].data[0].asnumpy(), np.concatenate([DENSE[3:], DENSE[:1]]))
    assert batches[0].label[0].stype == "default"
    assert batches[0].label[0].asnumpy().tolist() == LABELS[:3]
    lab = tmp_path / "l.libsvm"
    lab.write_text("0 1:2\n0\n0 0:1\n0 2:1\n0 1:1\n")
    it = mx.io.LibSVMIter(data_libsvm=svm, data_shape=(10,), label_libsvm=str(lab), label_shape=(3,),
                          batch_size=5)
    y = next(iter(it)).label[0]
    assert y.stype == "csr"
    np.testing.assert_array_equal(y.asnumpy(), [[0, 2, 0], [0, 0, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0]])


# MXNet 1.9.1's LibSVMIter(num_parts=n, part_index=p) on the file below: (first, last) label of
# each part (the label is the line number).
MXNET_PARTS = {2: [(0, 50), (51, 100)], 3: [(0, 33), (34, 67), (68, 100)],
               4: [(0, 25), (26, 50), (51, 75), (76, 100)],
               5: [(0, 20), (21, 40), (41, 60), (61, 80), (81, 100)]}


@pytest.mark.parametrize("num_parts", sorted(MXNET_PARTS))
def test_shards_match_mxnet(tmp_path, num_parts):
    """The byte-range shards hold the same lines as MXNet's (dmlc's InputSplit) for the same file."""
    path = tmp_path / "p.libsvm"
    path.write_text("".join(f"{i} " + " ".join(f"{j}:1" for j in range(i % 7, 50, 3 + i % 5)) + "\n"
                            for i in range(101)))
    got = []
    for p in range(num_parts):
        labels = [int(x) for c in iter_part(str(path), 50, num_parts, p) for x in c.labels]
        got.append((labels[0], labels[-1]))
    assert got == MXNET_PARTS[num_parts]


def test_getdata_returns_one_csr_array_as_mxnets_native_iterator(svm):
    """MXNet's C++ LibSVMIter hands back a CSRNDArray from getdata (not a list)."""
    it = mx.io.LibSVMIter(data_libsvm=svm, data_shape=(10,), batch_size=2)
    assert it.iter_next()
    data = it.getdata()
    assert data.stype == "csr" and data.shape == (2, 10)
    assert it.getlabel().shape == (2,)
