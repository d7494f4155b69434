"""LeakyReLU: every act_type forward in float32/float64 and its gradient (prelu's gamma too)."""
import math

import numpy as np
import pytest
from nn_check import check_gradient, forward, grads

L, A = 1.0507009873554805, 1.6732632423543772
REF = {
    "leaky": lambda x: np.where(x > 0, x, 0.25 * x),
    "elu": lambda x: np.where(x > 0, x, 0.25 * (np.exp(x) - 1)),
    "selu": lambda x: L * np.where(x > 0, x, A * (np.exp(x) - 1)),
    "gelu": lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("act", sorted(REF))
def test_forward(rng, act, dtype):
    """Each act_type matches its formula and keeps the dtype."""
    x = rng.standard_normal((3, 4)).astype(dtype)
    (y,) = forward("LeakyReLU", [x], act_type=act)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, REF[act](x.astype(np.float64)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("act", sorted(REF))
def test_gradient(rng, act):
    """Gradients agree with central differences (inputs kept away from the kink at 0)."""
    x = rng.standard_normal((3, 4))
    x[np.abs(x) < 1e-2] = 0.3
    check_gradient("LeakyReLU", [x], act_type=act)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prelu(rng, dtype):
    """prelu uses a per-channel gamma (axis 1) and returns gradients for data and gamma."""
    x = rng.standard_normal((2, 3, 4)).astype(dtype)
    gamma = np.array([0.1, 0.5, 2.0], dtype)
    (y,) = forward("LeakyReLU", [x, gamma], act_type="prelu")
    np.testing.assert_allclose(y, np.where(x > 0, x, gamma[None, :, None] * x), rtol=1e-6)
    check_gradient("LeakyReLU", [x.astype(np.float64), gamma.astype(np.float64)], act_type="prelu")


def test_prelu_gamma_per_sample_and_channel(rng):
    """A (N, C) gamma sits on data axes 0 and 1 (MXNet's expand_shape), for 2-d and 4-d data."""
    gamma = rng.uniform(0.1, 0.9, (3, 4))
    for shape in ((3, 4), (3, 4, 2, 5)):
        x = rng.standard_normal(shape)
        x[np.abs(x) < 1e-2] = 0.3
        g = gamma.reshape(gamma.shape + (1,) * (x.ndim - 2))
        (y,) = forward("LeakyReLU", [x, gamma], act_type="prelu")
        np.testing.assert_allclose(y, np.where(x > 0, x, g * x), rtol=1e-12)
        check_gradient("LeakyReLU", [x, gamma], act_type="prelu")


def test_rrelu_random_in_training_mean_slope_at_inference(rng):
    """rrelu draws slopes in [lower, upper] in training and uses their mean otherwise."""
    x = -np.ones((100, 10))
    y, r = forward("LeakyReLU", [x], is_train=True, act_type="rrelu")
    assert ((-y >= 0.125) & (-y <= 0.334)).all() and r.std() > 0.01
    y, _ = forward("LeakyReLU", [x], is_train=False, act_type="rrelu")
    np.testing.assert_allclose(y, -(0.125 + 0.334) / 2)
    (dx,) = grads("LeakyReLU", [x], [np.ones_like(x), np.zeros_like(x)], act_type="rrelu")
    np.testing.assert_allclose(dx, r)


def test_prelu_gamma_starts_at_a_quarter_unless_given_an_initializer():
    """MXNet's compose hook: the slope variable gets ``__init__ = Constant(0.25)``; a variable with
    its own ``init`` keeps it; other act_types have no gamma."""
    import mxref as mx
    s = mx.sym.LeakyReLU(mx.sym.Variable("data"), act_type="prelu", name="p")
    assert s.attr_dict()["p_gamma"]["__init__"] == '["Constant", {"value": 0.25}]'
    mod = mx.mod.Module(s, label_names=None)
    mod.bind(data_shapes=[("data", (10, 10))])
    mod.init_params()
    np.testing.assert_array_equal(mod.get_params()[0]["p_gamma"].asnumpy(), np.full(10, 0.25))
    g = mx.sym.Variable("g", init=mx.init.One())
    s = mx.sym.LeakyReLU(mx.sym.Variable("data"), gamma=g, act_type="prelu")
    assert s.attr_dict()["g"]["__init__"] == '["one", {}]'
    assert mx.sym.load_json(s.tojson()).attr_dict()["g"]["__init__"] == '["one", {}]'
    assert mx.sym.LeakyReLU(mx.sym.Variable("data"), act_type="leaky").list_arguments() == ["data"]
