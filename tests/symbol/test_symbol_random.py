"""mx.sym.random: MXNet 1.9.1's front end (python/mxnet/symbol/random.py) over the random operators."""
import numpy as np
import pytest

import mxref as mx


def test_namespace_holds_the_front_end_and_the_like_samplers():
    names = {"uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
             "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"}
    likes = {d + "_like" for d in ["uniform", "normal", "gamma", "exponential", "poisson",
                                   "negative_binomial", "generalized_negative_binomial"]}
    public = {n for n in dir(mx.sym.random) if not n.startswith("_")}
    assert names | likes <= public
    assert not any(n.startswith("pdf_") for n in public)      # mx.sym.random_pdf_* instead


def test_numbers_make_random_nodes_and_symbols_make_sample_nodes():
    g = mx.sym.random.gamma(2.0, 3.0, shape=(4,))
    assert g.list_outputs() == [g.name + "_output"] and g.name.startswith("_random_gamma")
    s = mx.sym.random.gamma(mx.sym.var("a"), mx.sym.var("b"), shape=(4,))
    assert s.list_arguments() == ["a", "b"] and s.infer_shape(a=(2,), b=(2,))[1] == [(2, 4)]
    e = mx.sym.random.exponential(mx.sym.var("scale"))
    assert e.get_internals().list_outputs()[1].startswith("_rdivscalar")
    assert mx.sym.random.randn(2, 3).infer_shape() == ([], [(2, 3)], [])
    with pytest.raises(mx.MXNetError, match="all Symbols or all numbers"):
        mx.sym.random.poisson(mx.sym.var("l")) + mx.sym.random.normal(mx.sym.var("a"), 1.0)


def test_exponential_symbol_of_scales_has_those_means():
    e = mx.sym.random.exponential(mx.sym.var("s"), shape=(20000,))
    mx.random.seed(4)
    out = e.bind(mx.cpu(), {"s": mx.nd.array([0.5, 4.0])}).forward()[0].asnumpy()
    np.testing.assert_allclose(out.mean(axis=1), [0.5, 4.0], rtol=0.05)


def test_bound_sampler_replays_under_a_seed_and_passes_gradients_through():
    """random.uniform(...) + X: the same seed gives the same forward, X's gradient is the head."""
    y = mx.sym.random.negative_binomial(k=3, p=0.4, shape=(30, 30)) + mx.sym.var("X")
    x, xg = mx.nd.zeros((30, 30)), mx.nd.zeros((30, 30))
    ex = y.bind(mx.cpu(), {"X": x}, {"X": xg})
    mx.random.seed(128)
    ex.forward(is_train=True)
    ex.backward(ex.outputs[0])
    first = ex.outputs[0].asnumpy()
    np.testing.assert_array_equal(xg.asnumpy(), first)
    mx.random.seed(128)
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), first)


def test_multinomial_returns_log_probabilities_by_default_and_shuffle_permutes():
    m = mx.sym.random.multinomial(mx.sym.var("p"), shape=2)
    assert len(m.list_outputs()) == 2
    outs = m.bind(mx.cpu(), {"p": mx.nd.array([[0.0, 1.0]])}).forward()
    np.testing.assert_array_equal(outs[0].asnumpy(), [[1, 1]])
    np.testing.assert_array_equal(outs[1].asnumpy(), [[0, 0]])
    data = mx.nd.arange(0, 9).reshape((3, 3))
    b = mx.sym.random.shuffle(mx.sym.var("a"))
    c = mx.sym.random.shuffle(data=b, name="c")
    rows = c.eval(a=data, ctx=mx.cpu())[0].asnumpy()
    np.testing.assert_array_equal(rows[np.argsort(rows[:, 0])], data.asnumpy())
    r = mx.sym.random.randint(-3, 3, shape=(50,), dtype="int64")
    v = r.bind(mx.cpu(), {}).forward()[0]
    assert v.dtype == np.int64 and -3 <= v.asnumpy().min() and v.asnumpy().max() < 3
