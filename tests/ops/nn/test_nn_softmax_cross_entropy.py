"""softmax_cross_entropy: summed -log softmax at the labels, (1,) output, gradient p - onehot."""
import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError


def test_value_matches_the_docstring_example():
    (y,) = forward("softmax_cross_entropy", [np.array([[1, 2, 3], [11, 7, 5]], np.float32),
                                             np.array([2, 0], np.float32)])
    assert y.shape == (1,) and y.dtype == np.float32
    np.testing.assert_allclose(y, [0.4281871], rtol=1e-5)


def test_gradient_and_symbol(rng):
    x = rng.standard_normal((5, 4))
    label = np.array([0, 3, 1, 1, 2], np.float64)
    check_gradient("softmax_cross_entropy", [x, label], wrt=[0])
    sym = mx.sym.softmax_cross_entropy(data=mx.sym.var("data"), label=mx.sym.var("label"))
    assert sym.infer_shape(data=(5, 4)) == ([(5, 4), (5,)], [(1,)], [])
    out = sym.bind(mx.cpu(), {"data": mx.nd.array(x), "label": mx.nd.array(label)}).forward()[0]
    p = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    np.testing.assert_allclose(out.asnumpy(), [-np.log(p[np.arange(5), label.astype(int)]).sum()],
                               rtol=1e-5)


def test_bad_shapes_and_labels():
    with pytest.raises(MXNetError, match="2-D"):
        mx.sym.softmax_cross_entropy(mx.sym.var("d"), mx.sym.var("l")).infer_shape(d=(2, 3, 4))
    with pytest.raises(MXNetError, match="label"):
        mx.nd.softmax_cross_entropy(mx.nd.ones((2, 3)), mx.nd.array([0, 3])).asnumpy()
