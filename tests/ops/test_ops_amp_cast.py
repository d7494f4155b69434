"""``amp_cast`` and ``amp_multicast``: MXNet 1.9.1's dtype rules, values, gradients, symbols."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


@pytest.mark.parametrize("src,dst,want", [
    ("float32", "float16", "float16"), ("float16", "float32", "float32"), ("float64", "float16", "float64"),
    ("int32", "float16", "int32"), ("float16", "int32", "int32")])
def test_amp_cast_casts_only_low_precision_floats(src, dst, want):
    """float16/float32 inputs become ``dtype``; other inputs keep theirs (MXNet 1.9.1's results)."""
    x = mx.nd.array([1.5, -2.0, 3.25], dtype=src)
    y = mx.nd.amp_cast(x, dtype=dst)
    assert y.dtype == np.dtype(want)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy().astype(want))


@pytest.mark.parametrize("dtypes,narrow,want", [
    (("float16", "float32", "int32"), False, ("float32", "float32", "int32")),
    (("float16", "float32"), True, ("float16", "float16")),
    (("float64", "float32"), False, ("float64", "float32")),
    (("float64", "float16"), False, ("float64", "float64")),      # MXNet: the first input's dtype
    (("float16", "float16"), False, ("float16", "float16"))])
def test_amp_multicast_common_type(dtypes, narrow, want):
    """The widest (or with cast_narrow the narrowest) low-precision type, as MXNet 1.9.1 picks it."""
    xs = [mx.nd.ones((2,), dtype=d) for d in dtypes]
    ys = mx.nd.amp_multicast(*xs, num_outputs=len(xs), cast_narrow=narrow)
    assert [y.dtype for y in ys] == [np.dtype(w) for w in want]


def test_gradients_cast_back_to_the_input_dtype():
    """d(sum(cast(x)^2))/dx = 2x, in x's dtype, through amp_cast and amp_multicast."""
    x, h = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0], dtype="float16")
    x.attach_grad()
    h.attach_grad()
    with mx.autograd.record():
        a, b = mx.nd.amp_multicast(x, h, num_outputs=2)
        c = mx.nd.amp_cast(x, dtype="float16").astype("float32")
        loss = (c ** 2).sum() + (a * a).sum() + (b * 3).sum()
    loss.backward()
    assert x.grad.dtype == np.float32 and h.grad.dtype == np.float16
    np.testing.assert_allclose(x.grad.asnumpy(), [4.0, 8.0])
    np.testing.assert_allclose(h.grad.asnumpy(), [3.0])


def test_symbols_and_errors():
    """Symbol outputs and type inference; a bad dtype or count is an MXNetError."""
    s = mx.sym.amp_multicast(mx.sym.var("a"), mx.sym.var("b"), num_outputs=2)
    assert len(s.list_outputs()) == 2
    _, outs, _ = s.infer_type(a="float16", b="float32")
    assert outs == [np.float32, np.float32]
    c = mx.sym.amp_cast(mx.sym.var("a"), dtype="float16")
    ex = c.bind(mx.cpu(), {"a": mx.nd.array([1.0, 2.0])})
    assert ex.forward()[0].dtype == np.float16
    with pytest.raises(MXNetError, match="amp_cast.*dtype"):
        mx.nd.amp_cast(mx.nd.ones(2), dtype="float17")
    with pytest.raises(MXNetError, match="amp_multicast: num_outputs must be >= 1"):
        mx.nd.amp_multicast(num_outputs=0)


def test_gradient_graphs_match_central_differences():
    """The _backward_Cast gradient nodes agree with central differences (float64 passes through)."""
    from ops_check import check_numeric_grad
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    check_numeric_grad("amp_cast", x, dtype="float32")
    check_numeric_grad("amp_multicast", x, x[0] * 3, num_outputs=2)
