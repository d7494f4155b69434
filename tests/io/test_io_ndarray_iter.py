"""NDArrayIter against numbers recorded from MXNet 1.9.1: pad/discard/roll_over over several epochs,
shuffling under np.random.seed, wrap-around when batch_size > num_data, input naming and dtypes,
provide_data/provide_label, hard_reset and the iter_next/getdata protocol."""
import numpy as np
import pytest

import mxref as mx
import mxref.io  # noqa: F401 - registers mx.io
from mxref import MXNetError

DATA = np.arange(40).reshape(10, 2, 2)   # example i has first value 4*i
LABEL = np.arange(10)


def _epochs(it, n):
    """[(first values of the batch's examples, pad)] for n epochs, resetting in between."""
    out = []
    for _ in range(n):
        out.append([(b.data[0].asnumpy()[:, 0, 0].astype(int).tolist(), b.pad) for b in it])
        it.reset()
    return out


# Recorded with MXNet 1.9.1:
#   it = mx.io.NDArrayIter(np.arange(40).reshape(10, 2, 2), np.arange(10), 3, last_batch_handle=MODE)
#   then three times: [(b.data[0].asnumpy()[:, 0, 0], b.pad) for b in it]; it.reset()
MXNET_MODES = {
    "pad": [[([0, 4, 8], 0), ([12, 16, 20], 0), ([24, 28, 32], 0), ([36, 0, 4], 2)]] * 3,
    "discard": [[([0, 4, 8], 0), ([12, 16, 20], 0), ([24, 28, 32], 0)]] * 3,
    "roll_over": [[([0, 4, 8], 0), ([12, 16, 20], 0), ([24, 28, 32], 0)],
                  [([36, 0, 4], 1), ([8, 12, 16], 0), ([20, 24, 28], 0)],
                  [([32, 36, 0], 2), ([4, 8, 12], 0), ([16, 20, 24], 0), ([28, 32, 36], 0)]],
}


@pytest.mark.parametrize("mode", sorted(MXNET_MODES))
def test_last_batch_modes_match_mxnet(mode):
    """pad wraps to the start and sets pad; discard drops; roll_over carries leftovers to the next epoch."""
    it = mx.io.NDArrayIter(DATA, LABEL, 3, last_batch_handle=mode)
    assert _epochs(it, 3) == MXNET_MODES[mode]


def test_labels_follow_data():
    """Each batch's labels are the labels of its examples, also across the wrap-around."""
    it = mx.io.NDArrayIter(DATA, LABEL, 4)
    for b in it:
        np.testing.assert_array_equal(b.data[0].asnumpy()[:, 0, 0], b.label[0].asnumpy() * 4)


def test_shuffle_matches_mxnet_under_numpy_seed():
    """Shuffling draws from numpy.random and composes the permutations epoch after epoch, as MXNet."""
    # MXNet 1.9.1: np.random.seed(1); mx.io.NDArrayIter(DATA, LABEL, 4, shuffle=True), 2 epochs
    np.random.seed(1)
    assert _epochs(mx.io.NDArrayIter(DATA, LABEL, 4, shuffle=True), 2) == [
        [([8, 36, 24, 16], 0), ([0, 12, 4, 28], 0), ([32, 20, 8, 36], 2)],
        [([12, 16, 0, 24], 0), ([32, 8, 4, 20], 0), ([36, 28, 12, 16], 2)]]
    # MXNet 1.9.1: np.random.seed(0); ... shuffle=True, last_batch_handle='roll_over', 3 epochs
    # (the rolled-over examples were drawn before the reshuffle, so one repeats in epoch 2)
    np.random.seed(0)
    it = mx.io.NDArrayIter(DATA, LABEL, 4, shuffle=True, last_batch_handle="roll_over")
    assert _epochs(it, 3) == [[([8, 32, 16, 36], 0), ([4, 24, 28, 12], 0)],
                              [([0, 20, 20, 28], 2), ([0, 4, 24, 8], 0), ([16, 12, 36, 32], 0)],
                              [([36, 24, 4, 8], 0), ([20, 16, 32, 0], 0)]]


def test_pad_wraps_several_times_when_batch_exceeds_data():
    """batch_size > num_data: the one batch repeats the data (MXNet: NDArrayIter(np.arange(4), None, 10))."""
    b = mx.io.NDArrayIter(np.arange(4), None, 10).next()
    assert b.data[0].asnumpy().astype(int).tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert b.pad == 6 and b.label == [] and b.index is None


def test_names_order_and_dtypes():
    """Dicts are ordered by key, lists named _i_data, numpy becomes float32, NDArrays keep dtype."""
    it = mx.io.NDArrayIter({"b": np.zeros((5, 3)), "a": np.zeros((5, 2), np.int32)},
                           {"y": np.zeros(5)}, 2)
    # MXNet 1.9.1: [DataDesc[a,(2, 2),float32,NCHW], DataDesc[b,(2, 3),float32,NCHW]], [y,(2,)]
    assert [(d.name, d.shape, d.dtype) for d in it.provide_data] == [("a", (2, 2), np.float32),
                                                                     ("b", (2, 3), np.float32)]
    assert [(d.name, d.shape) for d in it.provide_label] == [("y", (2,))]
    it = mx.io.NDArrayIter([np.zeros((5, 3)), np.zeros((5, 2))], [np.zeros(5)], 2)
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"]
    assert [d.name for d in it.provide_label] == ["softmax_label"]
    it = mx.io.NDArrayIter(mx.nd.zeros((5, 3), dtype="int32"), np.zeros((5, 1)), 2, layout="NC")
    assert repr(it.provide_data) == "[DataDesc[data,(2, 3),<class 'numpy.int32'>,NC]]"
    assert repr(it.provide_label) == "[DataDesc[softmax_label,(2, 1),<class 'numpy.float32'>,NC]]"
    b = it.next()
    assert (b.data[0].dtype, b.label[0].dtype) == (np.int32, np.float32)
    assert it.data[0][0] == "data" and it.data[0][1].shape == (5, 3)


def test_batch_axis_from_layout():
    """With layout 'TNC' batches are cut along axis 1."""
    x = np.arange(2 * 5 * 3).reshape(2, 5, 3)
    it = mx.io.NDArrayIter(x, None, 2, layout="TNC", last_batch_handle="discard")
    assert it.provide_data[0].shape == (2, 2, 3)
    got = [b.data[0].asnumpy() for b in it]
    assert len(got) == 2
    np.testing.assert_array_equal(got[1], x[:, 2:4])


def test_hard_reset_drops_rolled_over_examples():
    """hard_reset starts from example 0 even in roll_over mode (MXNet 1.9.1 gives [0,4,8] first)."""
    it = mx.io.NDArrayIter(DATA, LABEL, 3, last_batch_handle="roll_over")
    list(it)
    it.hard_reset()
    assert _epochs(it, 1)[0][0] == ([0, 4, 8], 0)


def test_step_protocol():
    """iter_next/getdata/getlabel/getpad/getindex read the current batch; getindex is None as in MXNet."""
    it = mx.io.NDArrayIter(DATA, LABEL, 3)
    assert it.iter_next()
    assert it.getdata()[0].shape == (3, 2, 2) and it.getlabel()[0].asnumpy().tolist() == [0, 1, 2]
    assert it.getpad() == 0 and it.getindex() is None
    for _ in range(3):
        assert it.iter_next()
    assert it.getpad() == 2 and it.getlabel()[0].asnumpy().tolist() == [9, 0, 1]
    assert not it.iter_next()
    with pytest.raises(MXNetError, match="reset"):
        it.getdata()


def test_batches_are_copies():
    """Writing into a batch does not change the iterator's data."""
    it = mx.io.NDArrayIter(DATA, LABEL, 3)
    b = it.next()
    b.data[0][:] = -1
    it.reset()
    assert it.next().data[0].asnumpy()[0, 0, 0] == 0


def test_longer_labels_are_cut_to_the_data():
    """As in MXNet, the first data array sets the number of examples: longer labels are read only
    up to it (MXNet's test_loss builds NDArrayIter(data[10:], labels of 20))."""
    it = mx.io.NDArrayIter(DATA[:4], {"l": np.arange(10), "w": np.arange(10) * 2}, 2)
    assert it.num_data == 4
    batches = [(b.label[0].asnumpy().tolist(), b.label[1].asnumpy().tolist()) for b in it]
    assert batches == [([0, 1], [0, 2]), ([2, 3], [4, 6])]


def test_bad_arguments_raise():
    """Unknown mode, mismatched lengths, no batch axis and non-array input raise MXNetError."""
    with pytest.raises(MXNetError, match="last_batch_handle"):
        mx.io.NDArrayIter(DATA, LABEL, 3, last_batch_handle="wrap")
    with pytest.raises(MXNetError, match="'softmax_label' has 9 examples"):
        mx.io.NDArrayIter(DATA, LABEL[:9], 3)
    with pytest.raises(MXNetError, match="no batch axis"):
        mx.io.NDArrayIter(DATA, None, 3, layout="CHW")
    with pytest.raises(MXNetError, match="batch_size"):
        mx.io.NDArrayIter(DATA, None, 0)
    with pytest.raises(MXNetError, match="must be"):
        mx.io.NDArrayIter(42, None, 1)
