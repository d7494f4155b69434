"""SequenceMask, SequenceLast, SequenceReverse: loops as the reference, gradients, shapes, errors."""
import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError


def _time_major(x, axis):
    return x if axis == 0 else np.swapaxes(x, 0, 1)


def mask_ref(x, lens, axis, value):
    out = _time_major(x.copy(), axis)
    for b, n in enumerate(lens):
        out[int(n):, b] = value
    return _time_major(out, axis)


def last_ref(x, lens, axis):
    t = _time_major(x, axis)
    return np.stack([t[int(n) - 1, b] for b, n in enumerate(lens)])


def reverse_ref(x, lens):
    out = x.copy()
    for b, n in enumerate(lens):
        out[:int(n), b] = x[:int(n), b][::-1]
    return out


@pytest.mark.parametrize("axis", [0, 1])
def test_mask_and_last_forward(rng, axis):
    """Steps at or past each length take `value`; SequenceLast picks step length-1."""
    x = rng.standard_normal((4, 3, 2)).astype(np.float32)
    lens = np.array([1, 4, 2] if axis == 0 else [3, 1, 2, 2], np.float32)
    (y,) = forward("SequenceMask", [x, lens], use_sequence_length=True, axis=axis, value=-7.0)
    np.testing.assert_array_equal(y, mask_ref(x, lens, axis, -7.0))
    (z,) = forward("SequenceLast", [x, lens], use_sequence_length=True, axis=axis)
    np.testing.assert_array_equal(z, last_ref(x, lens, axis))


def test_without_lengths():
    """Without use_sequence_length: mask is the identity, last is the last step, reverse flips."""
    x = np.arange(24, dtype=np.float32).reshape(3, 2, 4)
    np.testing.assert_array_equal(forward("SequenceMask", [x])[0], x)
    np.testing.assert_array_equal(forward("SequenceLast", [x])[0], x[-1])
    np.testing.assert_array_equal(forward("SequenceReverse", [x])[0], x[::-1])


def test_reverse_forward_matches_docstring():
    """MXNet's documented example: lengths [2, 3] reverse only the first 2 resp. 3 steps."""
    x = np.arange(1, 19, dtype=np.float32).reshape(3, 2, 3)
    (y,) = forward("SequenceReverse", [x, np.array([2, 3])], use_sequence_length=True)
    np.testing.assert_array_equal(y, reverse_ref(x, [2, 3]))
    np.testing.assert_array_equal(y[:, :, 0], [[7, 16], [1, 10], [13, 4]])


@pytest.mark.parametrize("op,axis", [("SequenceMask", 0), ("SequenceMask", 1), ("SequenceLast", 0),
                                     ("SequenceLast", 1), ("SequenceReverse", 0)])
def test_gradients(rng, op, axis):
    """Gradients w.r.t. data agree with central differences (the lengths get none)."""
    x = rng.standard_normal((3, 4, 2))
    lens = np.array([2, 3, 1, 3]) if axis == 0 else np.array([4, 1, 2])
    check_gradient(op, [x, lens], wrt=[0], use_sequence_length=True, axis=axis)
    check_gradient(op, [x], axis=axis)


def test_nd_sym_and_infer_shape():
    """mx.nd / mx.sym forms; the lengths input appears only with use_sequence_length."""
    s = mx.sym.SequenceLast(mx.sym.var("d"), mx.sym.var("l"), use_sequence_length=True, axis=1)
    assert s.list_arguments() == ["d", "l"]
    assert s.infer_shape(d=(2, 5, 3)) == ([(2, 5, 3), (2,)], [(2, 3)], [])
    assert mx.sym.SequenceMask(mx.sym.var("d")).list_arguments() == ["d"]
    lt = mx.sym.SequenceMask(mx.sym.var("d"), mx.sym.var("l"), use_sequence_length=True).infer_type(
        d="float16", l="int32")
    assert lt[0] == [np.float16, np.int32] and lt[1] == [np.float16]
    x = mx.nd.array(np.arange(6).reshape(3, 2))
    y = mx.nd.SequenceMask(x, mx.nd.array([1, 2]), use_sequence_length=True, value=9)
    np.testing.assert_array_equal(y.asnumpy(), [[0, 1], [9, 3], [9, 9]])
    ex = mx.sym.SequenceReverse(mx.sym.var("d")).bind(mx.cpu(), {"d": x})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), x.asnumpy()[::-1])


def test_errors():
    """Bad axis or lengths shape name the operator and argument."""
    d = mx.sym.var("d")
    with pytest.raises(MXNetError, match="SequenceReverse: axis"):
        mx.sym.SequenceReverse(d, axis=1).infer_shape(d=(2, 3, 4))
    with pytest.raises(MXNetError, match="SequenceMask: axis"):
        mx.sym.SequenceMask(d, axis=2).infer_shape(d=(2, 3, 4))
    with pytest.raises(MXNetError, match="sequence_length"):
        mx.sym.SequenceLast(d, mx.sym.var("l"), use_sequence_length=True).infer_shape(d=(2, 3, 4), l=(2,))


def test_inputs_given_as_none_are_left_out():
    """As in MXNet, `sequence_length=None` (or a trailing positional None) means no such input."""
    s = mx.sym.SequenceReverse(data=mx.sym.var("seq"), sequence_length=None, use_sequence_length=False)
    assert s.list_arguments() == ["seq"]
    x = mx.nd.array(np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(mx.nd.SequenceMask(x, sequence_length=None).asnumpy(), x.asnumpy())
    np.testing.assert_array_equal(mx.nd.SequenceLast(x, None).asnumpy(), [4, 5])
    r = mx.sym.contrib.BilinearResize2D(mx.sym.var("d"), None, height=2, width=3)
    assert r.list_arguments() == ["d"]
