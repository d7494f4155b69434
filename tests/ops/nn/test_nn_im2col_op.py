"""im2col / col2im operators: MXNet's column layout, adjointness, gradients, a convolution as a GEMM."""
import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError


def test_column_layout_matches_mxnet():
    """Rows (c, kh, kw), columns the window positions (MXNet 1.9.1's output for this input)."""
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    (c,) = forward("im2col", [x], kernel=(2, 2))
    assert c.shape == (1, 8, 4)
    np.testing.assert_array_equal(c[0, :4], [[0, 1, 3, 4], [1, 2, 4, 5], [3, 4, 6, 7], [4, 5, 7, 8]])
    np.testing.assert_array_equal(c[0, 4], [9, 10, 12, 13])


@pytest.mark.parametrize("kw", [dict(kernel=(3, 3)), dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2),
                                                          pad=(1, 0)), dict(kernel=(2,), pad=(1,))],
                         ids=str)
def test_col2im_is_the_adjoint_and_gradients(rng, kw):
    shape = (2, 3, 7, 6)[:2 + len(kw["kernel"])]
    x = rng.standard_normal(shape)
    (c,) = forward("im2col", [x], **kw)
    y = rng.standard_normal(c.shape)
    (back,) = forward("col2im", [y], output_size=shape[2:], **kw)
    assert back.shape == shape
    np.testing.assert_allclose((c * y).sum(), (x * back).sum(), rtol=1e-10)     # <Ax, y> = <x, A'y>
    check_gradient("im2col", [x], **kw)
    check_gradient("col2im", [y], output_size=shape[2:], **kw)


def test_convolution_as_a_gemm(rng):
    x, w = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 3))
    kw = dict(kernel=(3, 3), stride=(2, 1), pad=(1, 1))
    col = mx.nd.im2col(mx.nd.array(x, dtype="float64"), **kw).asnumpy()
    got = np.einsum("fk,nkl->nfl", w.reshape(4, -1), col)
    conv = mx.nd.Convolution(mx.nd.array(x, dtype="float64"), mx.nd.array(w, dtype="float64"),
                             num_filter=4, no_bias=True, **kw).asnumpy()
    np.testing.assert_allclose(got.reshape(conv.shape), conv, rtol=1e-10)
    s = mx.sym.col2im(mx.sym.var("c"), output_size=(6, 5), **kw)
    assert s.infer_shape(c=col.shape)[1] == [(2, 3, 6, 5)]


def test_bad_shapes():
    with pytest.raises(MXNetError, match="col2im"):
        mx.nd.col2im(mx.nd.ones((1, 5, 4)), output_size=(3, 3), kernel=(2, 2))
    with pytest.raises(MXNetError, match="im2col"):
        mx.nd.im2col(mx.nd.ones((1, 1, 3, 3)), kernel=(2, 2, 2))
