"""_sample_multinomial: shapes, index dtypes, frequencies, log-probabilities and their gradient."""
import numpy as np
import pytest

import mxref as mx
from mxref.test_utils import chi_square_check


def test_shapes_follow_mxnet():
    """One row and no shape: one draw, shape (1,); rows keep their leading axes, then ``shape``."""
    p1 = mx.nd.array([0.5, 0.5])
    p2 = mx.nd.array([[0.1, 0.9], [0.5, 0.5], [1.0, 0.0]])
    assert mx.nd.random.multinomial(p1).shape == (1,)
    assert mx.nd.random.multinomial(p1, shape=(2, 3)).shape == (2, 3)
    assert mx.nd.random.multinomial(p2).shape == (3,)
    assert mx.nd.random.multinomial(p2, shape=4).shape == (3, 4)
    s = mx.sym.random.multinomial(mx.sym.var("d"), shape=3, name="m")
    assert s.list_outputs() == ["m_output0", "m_output1"]
    assert s.infer_shape(d=(2, 4))[1] == [(2, 3), (2, 3)]
    assert s.infer_type(d="float64")[1] == [np.int32, np.float64]
    assert mx.sym.random.multinomial(mx.sym.var("d"), get_prob=False, name="n").list_outputs() == \
        ["n_output"]


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float16", "float32", "float64"])
def test_frequencies_match_the_probabilities(dtype):
    """Chi-square goodness of fit of 100000 draws (fixed seed), in every index dtype."""
    probs = [0.1, 0.2, 0.3, 0.05, 0.15, 0.2]
    mx.random.seed(17)
    p, obs, exp = chi_square_check(
        lambda n: mx.nd.random.multinomial(mx.nd.array(probs), shape=n, dtype=dtype).asnumpy(),
        list(range(6)), probs, nsamples=100000)
    assert p > 0.01, (p, obs, exp)
    assert mx.nd.random.multinomial(mx.nd.array(probs), dtype=dtype).dtype == np.dtype(dtype)


def test_zero_probability_classes_are_never_drawn_and_rows_are_independent():
    x = mx.nd.array([[0, 1, 0, 0], [0, 0, 0, 1], [0.5, 0, 0.5, 0]])
    y = mx.nd.random.multinomial(x, shape=500).asnumpy()
    assert (y[0] == 1).all() and (y[1] == 3).all() and set(np.unique(y[2])) == {0, 2}


def test_log_probabilities_and_their_gradient():
    """get_prob=True returns log p[y]; a head gradient g gives sum_{j: y_j = c} g_j / p_c (MXNet's
    score-function gradient), the same through autograd and a bound executor."""
    x = mx.nd.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y, logp = mx.nd.random.multinomial(x, shape=50, get_prob=True)
        (logp * 5).backward()
    y, xv = y.asnumpy().astype(int), x.asnumpy()
    picked = np.take_along_axis(xv, y, axis=1)
    np.testing.assert_allclose(logp.asnumpy(), np.log(picked), rtol=1e-6)
    want = np.zeros_like(xv)
    for i in range(2):
        np.add.at(want[i], y[i], 5 / picked[i])
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-12)

    s = mx.sym.random.multinomial(mx.sym.var("p"), shape=50)
    ex = s.bind(mx.cpu(), {"p": x}, args_grad={"p": mx.nd.zeros((2, 4), dtype="float64")})
    outs = ex.forward(is_train=True)
    ex.backward([mx.nd.zeros((2, 50)), mx.nd.ones((2, 50), dtype="float64")])
    yy = outs[0].asnumpy().astype(int)
    want = np.zeros_like(xv)
    for i in range(2):
        np.add.at(want[i], yy[i], 1 / xv[i][yy[i]])
    np.testing.assert_allclose(ex.grad_dict["p"].asnumpy(), want, rtol=1e-12)


def test_without_get_prob_the_gradient_is_zero():
    x = mx.nd.array([0.3, 0.7])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.random.multinomial(x, shape=5, dtype="float32")
        (y * x[0]).sum().backward()
    assert x.grad.asnumpy()[1] == 0


def test_class_count_that_the_index_dtype_cannot_hold_is_refused():
    """257 classes do not fit in uint8 (indices up to 255), 2050 not in float16 (exact up to 2048)."""
    with pytest.raises(mx.MXNetError, match="_sample_multinomial: 257 classes .* dtype uint8"):
        mx.nd.random.multinomial(mx.nd.zeros(257), dtype="uint8")
    with pytest.raises(mx.MXNetError, match="dtype float16"):
        mx.nd.random.multinomial(mx.nd.zeros(2050), dtype="float16")
    assert mx.nd.random.multinomial(mx.nd.ones(256) / 256, dtype="uint8").dtype == np.uint8
    with pytest.raises(mx.MXNetError, match="at least one axis"), mx.np_shape():
        mx.nd.random.multinomial(mx.nd.ones(()))
