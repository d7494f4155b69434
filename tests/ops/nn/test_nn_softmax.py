"""softmax / log_softmax: axis, temperature and dtype; gradients through the output."""
import numpy as np
import pytest
from nn_check import check_gradient, forward

from mxref.base import MXNetError
from mxref.ops import registry


def _ref(x, axis, t=1.0):
    z = x / t
    e = np.exp(z - z.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_forward(rng, dtype, axis):
    """softmax sums to one along axis; log_softmax is its logarithm."""
    x = (rng.standard_normal((3, 4, 2)) * 5).astype(dtype)
    (y,) = forward("softmax", [x], axis=axis)
    (ly,) = forward("log_softmax", [x], axis=axis)
    assert y.dtype == ly.dtype == dtype
    np.testing.assert_allclose(y, _ref(x.astype(np.float64), axis), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ly, np.log(_ref(x.astype(np.float64), axis)), rtol=1e-5, atol=1e-6)


def test_temperature_and_dtype(rng):
    """temperature divides the logits; dtype sets the output type (float64 from float32 here)."""
    x = rng.standard_normal((2, 5)).astype(np.float32)
    (y,) = forward("softmax", [x], temperature=2.5, dtype="float64")
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, _ref(x.astype(np.float64), -1, 2.5), rtol=1e-6)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"temperature": 0.7}])
def test_gradient(rng, op, kw):
    """Gradients from (ograd, output) agree with central differences."""
    check_gradient(op, [rng.standard_normal((3, 4))], **kw)


def test_use_length_masks_the_tail_of_each_row(rng):
    """softmax over the first length[i, j] entries along axis 1; the rest give 0 and no gradient."""
    x = rng.standard_normal((2, 4, 3))
    length = np.array([[1, 2, 4], [3, 4, 2]], np.int32)
    (y,) = forward("softmax", [x, length], axis=1, use_length=True)
    want = np.zeros_like(x)
    for i in range(2):
        for j in range(3):
            n = length[i, j]
            want[i, :n, j] = _ref(x[i, :n, j], 0)
    np.testing.assert_allclose(y, want, rtol=1e-12)
    check_gradient("softmax", [x, length], wrt=[0], axis=1, use_length=True)
    for name in ("log_softmax", "softmin"):
        with pytest.raises(MXNetError, match="use_length"):
            registry.get(name).parse_params({"use_length": True})
