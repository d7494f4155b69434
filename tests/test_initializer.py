"""Initializers: suffix dispatch, __init__ overrides, defaults, distributions, seeds, JSON, Load/Mixed."""
import json
import warnings

import numpy as np
import pytest

import mxref as mx
from mxref import initializer as init
from mxref.initializer import InitDesc


def _filled(initializer, name, shape=(3, 4), attrs=None):
    arr = mx.nd.full(shape, 7.0)
    initializer(InitDesc(name, attrs), arr)
    return arr.asnumpy()


@pytest.mark.parametrize("name,value", [("fc_weight", 5.0), ("fc_bias", 0.0), ("bn_gamma", 1.0),
                                        ("bn_beta", 0.0), ("q_min", 0.0), ("q_max", 1.0)])
def test_suffix_rules(name, value):
    """weight -> the initializer's rule; bias/beta 0 and gamma 1 even under Constant(5) (item 4)."""
    np.testing.assert_array_equal(_filled(init.Constant(5.0), name), value)


@pytest.mark.parametrize("name", ["x_moving_mean", "x_moving_var", "x_moving_avg", "foo", "data"])
def test_unknown_suffix_raises_value_error(name):
    """An InitDesc matching no known suffix raises ValueError, moving_* included (MXNet 1.9.1)."""
    with pytest.raises(ValueError, match="Unknown initialization pattern"):
        _filled(init.Uniform(), name)


def test_init_attribute_overrides_suffix():
    """A variable's __init__ attribute (JSON) decides: moving_mean 0, moving_var 1, and it wins
    over the global initializer even for a *_weight."""
    mean = _filled(init.Uniform(), "bn_moving_mean", attrs={"__init__": '["zero", {}]'})
    var = _filled(init.Uniform(), "bn_moving_var", attrs={"__init__": '["one", {}]'})
    assert (mean == 0).all() and (var == 1).all()
    w = _filled(init.Zero(), "fc_weight", attrs={"__init__": init.Constant(3.0).dumps()})
    np.testing.assert_array_equal(w, 3.0)
    desc = InitDesc("fc_weight")
    glob = init.Zero()
    glob(desc, mx.nd.zeros((2,)))
    assert desc.global_init is glob


def test_legacy_string_names():
    """A plain str name takes the deprecated path: moving stats, upsampling and stn_loc rules."""
    def legacy(name, shape=(2, 3)):
        arr = mx.nd.full(shape, 7.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            init.Uniform()(name, arr)
        assert any(issubclass(c.category, DeprecationWarning) for c in caught)
        return arr.asnumpy()
    assert (legacy("bn_moving_mean") == 0).all() and (legacy("bn_moving_var") == 1).all()
    assert (legacy("bn_moving_inv_var") == 0).all() and (legacy("bn_moving_avg") == 0).all()
    assert (legacy("stn_loc_weight") == 0).all()
    np.testing.assert_array_equal(legacy("stn_loc_bias", (6,)), [1, 0, 0, 0, 1, 0])
    assert legacy("upsampling0_weight", (1, 1, 4, 4))[0, 0, 1, 1] == pytest.approx(0.5625)
    with pytest.raises(ValueError):
        legacy("mystery")
    with pytest.raises(TypeError), pytest.warns(DeprecationWarning):
        init.Uniform()("fc_weight", np.zeros(3))


def test_defaults_and_dumps_match_mxnet():
    """Default arguments and dumps() strings are MXNet 1.9.1's (e.g. ``mx.init.Xavier().dumps()``)."""
    want = [
        (init.Xavier(), ["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]),
        (init.MSRAPrelu(), ["msraprelu", {"factor_type": "avg", "slope": 0.25}]),
        (init.Uniform(), ["uniform", {"scale": 0.07}]),
        (init.Normal(), ["normal", {"sigma": 0.01}]),
        (init.Orthogonal(), ["orthogonal", {"scale": 1.414, "rand_type": "uniform"}]),
        (init.Constant(np.array([1., 2.])), ["constant", {"value": [1.0, 2.0]}]),
        (init.Zero(), ["zero", {}]),
        (init.LSTMBias(), ["lstmbias", {"forget_bias": 1.0}]),
    ]
    for obj, expected in want:
        assert json.loads(obj.dumps()) == expected
    assert init.MSRAPrelu().magnitude == pytest.approx(2 / 1.0625)


def test_create_forms_and_register():
    """create takes names, aliases, JSON from dumps() and instances; register adds new ones."""
    assert isinstance(init.create("zeros"), init.Zero) and isinstance(init.create("ones"), init.One)
    x = init.create(init.Xavier(factor_type="in", magnitude=2.34).dumps())
    assert x == init.Xavier(factor_type="in", magnitude=2.34)
    assert init.create("normal", sigma=0.5).sigma == 0.5
    u = init.Uniform()
    assert init.create(u) is u

    @init.register
    class Tenth(init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 0.1

    np.testing.assert_allclose(_filled(init.create("tenth"), "a_weight"), 0.1)
    with pytest.raises(ValueError, match="not registered"):
        init.create("no_such_init")


def test_uniform_and_normal_statistics():
    """Uniform(s) stays in [-s, s] with variance s²/3; Normal(sigma) has std sigma."""
    u = _filled(init.Uniform(0.3), "w_weight", (200, 100))
    assert np.abs(u).max() <= 0.3 and u.var() == pytest.approx(0.09 / 3, rel=0.05)
    n = _filled(init.Normal(0.2), "w_weight", (200, 100))
    assert n.std() == pytest.approx(0.2, rel=0.05) and abs(n.mean()) < 0.01


@pytest.mark.parametrize("factor_type,factor", [("avg", (32 * 9 + 64 * 9) / 2), ("in", 32 * 9),
                                                ("out", 64 * 9)])
def test_xavier_scale_includes_kernel_area(factor_type, factor):
    """Xavier's fans are shape[1] and shape[0] times prod(shape[2:]) (item 5)."""
    c = np.sqrt(3.0 / factor)
    w = _filled(init.Xavier(factor_type=factor_type), "conv_weight", (64, 32, 3, 3))
    assert np.abs(w).max() <= c and np.abs(w).max() > 0.98 * c
    g = _filled(init.Xavier(rnd_type="gaussian", factor_type=factor_type, magnitude=2), "c_weight",
                (64, 32, 3, 3))
    assert g.std() == pytest.approx(np.sqrt(2.0 / factor), rel=0.05)


def test_xavier_errors():
    """Xavier refuses vectors and unknown factor/random types with ValueError."""
    with pytest.raises(ValueError, match="at least 2D"):
        _filled(init.Xavier(), "v_weight", (5,))
    with pytest.raises(ValueError, match="factor type"):
        _filled(init.Xavier(factor_type="sideways"), "m_weight")
    with pytest.raises(ValueError, match="random type"):
        _filled(init.Xavier(rnd_type="cauchy"), "m_weight")


@pytest.mark.parametrize("rand_type", ["uniform", "normal"])
def test_orthogonal_rows_are_orthonormal(rand_type):
    """Orthogonal(scale): W W^T = scale² I for a wide matrix, reshaped to the weight's shape."""
    w = _filled(init.Orthogonal(scale=2.0, rand_type=rand_type), "o_weight", (4, 3, 2, 2))
    flat = w.reshape(4, 12)
    np.testing.assert_allclose(flat @ flat.T, 4.0 * np.eye(4), atol=1e-5)


def test_seed_makes_initialization_reproducible():
    """mx.random.seed(s) before initializing gives the same values; another seed differs."""
    def draw(seed):
        mx.random.seed(seed)
        return _filled(init.Xavier(), "fc_weight", (8, 8)), _filled(init.Normal(1.0), "fc_weight", (8, 8))
    a, b, c = draw(42), draw(42), draw(43)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_bilinear_matches_mxnet():
    """Bilinear weights for a (1, 1, 3, 5) kernel equal MXNet 1.9.1's (``mx.init.Bilinear()``)."""
    want = [[1 / 9, 2 / 9, 3 / 9, 2 / 9, 1 / 9], [2 / 9, 4 / 9, 6 / 9, 4 / 9, 2 / 9],
            [3 / 9, 6 / 9, 1.0, 6 / 9, 3 / 9]]
    np.testing.assert_allclose(_filled(init.Bilinear(), "up_weight", (1, 1, 3, 5))[0, 0], want, rtol=1e-6)


def test_lstm_bias_and_constant_array():
    """LSTMBias sets the forget-gate quarter; Constant accepts an NDArray of the weight's shape."""
    np.testing.assert_array_equal(_filled(init.LSTMBias(2.0), "lstm_weight", (8,)), [0, 0, 2, 2, 0, 0, 0, 0])
    value = mx.nd.array(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(_filled(init.Constant(value), "c_weight", (2, 3)), value.asnumpy())
    c = init.Constant(value)
    assert json.loads(c.dumps())[1]["value"] == value.asnumpy().tolist()
    assert c.dumps() == json.dumps(["constant", c._kwargs])      # the recorded value is JSON-ready


def test_mixed_picks_first_matching_pattern():
    """Mixed uses the first regex that matches; no match raises ValueError."""
    mixed = init.Mixed(["fc1_.*", ".*"], [init.Constant(2.0), init.One()])
    assert (_filled(mixed, "fc1_weight") == 2).all() and (_filled(mixed, "fc2_weight") == 1).all()
    with pytest.raises(ValueError, match="did not match"):
        _filled(init.Mixed(["a.*"], [init.One()]), "b_weight")
    with pytest.raises(ValueError):
        init.Mixed(["a", "b"], [init.One()])


def test_load_from_dict_and_file(tmp_path):
    """Load drops arg:/aux: prefixes, checks shapes, and falls back to default_init."""
    saved = {"arg:fc_weight": mx.nd.array(np.full((2, 2), 3.0)), "aux:bn_moving_var": mx.nd.ones((2,))}
    path = str(tmp_path / "p.params")
    mx.nd.save(path, saved)
    for source in (saved, path):
        loader = init.Load(source, default_init=init.Zero())
        np.testing.assert_array_equal(_filled(loader, "fc_weight", (2, 2)), 3.0)
        np.testing.assert_array_equal(_filled(loader, "bn_moving_var", (2,)), 1.0)
        np.testing.assert_array_equal(_filled(loader, "other_weight", (2,)), 0.0)
    with pytest.raises(ValueError, match="Shape mismatch"):
        _filled(init.Load(saved), "fc_weight", (3, 3))
    with pytest.raises(ValueError, match="no default"):
        _filled(init.Load(saved), "missing_weight")
