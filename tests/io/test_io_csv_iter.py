"""CSVIter against MXNet 1.9.1: round_batch wrap-around and the epoch that continues after it,
round_batch=False, label shapes, dtype, directories; plus mxref's num_parts/part_index sharding."""
import numpy as np
import pytest

import mxref as mx
import mxref.io  # noqa: F401 - registers mx.io
from mxref import MXNetError


@pytest.fixture
def csv(tmp_path):
    """The four-row example of MXNet's CSVIter docstring, with labels 1..4."""
    (tmp_path / "d.csv").write_text("1,2,3\n2,3,4\n3,4,5\n4,5,6\n")
    (tmp_path / "l.csv").write_text("1\n2\n3\n4\n")
    (tmp_path / "l2.csv").write_text("1,2\n3,4\n5,6\n7,8\n")
    return tmp_path


def _epochs(it, n):
    out = []
    for _ in range(n):
        out.append([(b.data[0].asnumpy()[:, 0].astype(int).tolist(),
                     b.label[0].asnumpy().astype(int).tolist(), b.pad, b.index.tolist()) for b in it])
        it.reset()
    return out


def test_round_batch_matches_mxnet(csv):
    """The last batch wraps to the start; the next epoch continues after the wrapped rows."""
    it = mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(3,), label_csv=str(csv / "l.csv"),
                       batch_size=3)
    # MXNet 1.9.1: same call, three epochs of [(data[:, 0], label, pad, index)]
    assert _epochs(it, 3) == [
        [([1, 2, 3], [1, 2, 3], 0, [0, 1, 2]), ([4, 1, 2], [4, 1, 2], 2, [3, 0, 1])],
        [([3, 4, 1], [3, 4, 1], 1, [2, 3, 0])],
        [([2, 3, 4], [2, 3, 4], 0, [1, 2, 3])]]


def test_no_round_batch_matches_mxnet(csv):
    """round_batch=False: filler rows keep the previous batch's values, every epoch starts at row 0."""
    it = mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(3,), batch_size=3, round_batch=False)
    # MXNet 1.9.1: same call; labels are all 0 without label_csv
    epoch = [([1, 2, 3], [0, 0, 0], 0, [0, 1, 2]), ([4, 2, 3], [0, 0, 0], 2, [3, 1, 2])]
    assert _epochs(it, 2) == [epoch, epoch]


def test_shapes_and_dtype_match_mxnet(csv):
    """data_shape reshapes each row; a (1,) label gives (batch,), others keep their shape; dtype parses."""
    it = mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(3,), label_csv=str(csv / "l2.csv"),
                       label_shape=(2,), batch_size=3)
    assert [d.shape for d in it.provide_data + it.provide_label] == [(3, 3), (3, 2)]
    assert it.next().label[0].asnumpy().tolist() == [[1, 2], [3, 4], [5, 6]]
    it = mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(1, 3), batch_size=3)
    assert [d.shape for d in it.provide_data + it.provide_label] == [(3, 1, 3), (3,)]
    it = mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(3,), batch_size=2, dtype="int32")
    # MXNet 1.9.1: [DataDesc[data,(2, 3),<class 'numpy.int32'>,NCHW]], label int32 too
    assert repr(it.provide_data) == "[DataDesc[data,(2, 3),<class 'numpy.int32'>,NCHW]]"
    b = it.next()
    assert (b.data[0].dtype, b.label[0].dtype) == (np.int32, np.int32)


def test_directory_reads_every_file_in_name_order(tmp_path):
    """data_csv may be a directory: its files are read one after the other, by name."""
    (tmp_path / "b.csv").write_text("3,3\n4,4\n")
    (tmp_path / "a.csv").write_text("1,1\n2,2\n")
    it = mx.io.CSVIter(data_csv=str(tmp_path), data_shape=(2,), batch_size=4)
    assert it.next().data[0].asnumpy()[:, 0].tolist() == [1, 2, 3, 4]


@pytest.mark.parametrize("num_parts", [1, 2, 3, 4])
def test_parts_cover_every_row_once(tmp_path, num_parts):
    """num_parts/part_index give contiguous shards that together hold each row exactly once."""
    (tmp_path / "d.csv").write_text("".join(f"{i},{-i}\n" for i in range(11)))
    seen = []
    for part in range(num_parts):
        it = mx.io.CSVIter(data_csv=str(tmp_path / "d.csv"), data_shape=(2,), batch_size=1,
                           num_parts=num_parts, part_index=part)
        rows = [int(b.data[0].asnumpy()[0, 0]) for b in it]
        assert rows == sorted(rows)
        seen += rows
    assert sorted(seen) == list(range(11))


def test_bad_input_raises(csv):
    """Wrong row length, short label file, bad part, too few rows for round_batch, missing file."""
    with pytest.raises(MXNetError, match=r"has 3 values but its shape \(2,\) needs 2"):
        mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(2,), batch_size=2)
    (csv / "short.csv").write_text("1\n2\n")
    with pytest.raises(MXNetError, match="fewer than the 4 rows"):
        mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(3,), label_csv=str(csv / "short.csv"),
                      batch_size=2)
    with pytest.raises(MXNetError, match="part_index"):
        mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(3,), batch_size=2, num_parts=2,
                      part_index=2)
    it = mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(3,), batch_size=9)
    with pytest.raises(MXNetError, match="smaller batch_size"):
        it.next()
    with pytest.raises(MXNetError, match="does not exist"):
        mx.io.CSVIter(data_csv=str(csv / "none.csv"), data_shape=(3,), batch_size=2)


def test_getdata_and_getlabel_return_one_array_as_mxnets_native_iterators(csv):
    """MXNet's C++ iterators hand back an NDArray from getdata/getlabel (not a list)."""
    it = mx.io.CSVIter(data_csv=str(csv / "d.csv"), data_shape=(3,), label_csv=str(csv / "l.csv"),
                       batch_size=2)
    assert it.iter_next()
    assert it.getdata().asnumpy().tolist() == [[1, 2, 3], [2, 3, 4]]
    assert it.getlabel().asnumpy().tolist() == [1, 2]
