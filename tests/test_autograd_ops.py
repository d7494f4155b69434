"""mx.autograd through many operators: gradients vs central differences and closed forms, and the
training-flag behaviour of Dropout and BatchNorm under record() / train_mode()."""
import numpy as np
import pytest

from mxref import autograd as ag
from mxref import nd

RNG = np.random.default_rng(7)


def _rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape)


def check_grad(fn, *arrays, train=False, eps=1e-6, rtol=1e-5, atol=1e-7):
    """Autograd's gradient of ``sum(fn(*xs) * w)`` (``w`` random) against central differences.

    Everything runs in float64; ``train`` evaluates the differences in training mode, as
    ``record()`` does for the recorded pass.
    """
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    xs = [nd.array(a, dtype="float64") for a in arrays]
    for x in xs:
        x.attach_grad()
    with ag.record():
        out = fn(*xs)
    w = RNG.standard_normal(out.shape)
    out.backward(nd.array(w, dtype="float64"))

    def loss(values):
        with ag.train_mode() if train else ag.predict_mode():
            return float((fn(*[nd.array(v, dtype="float64") for v in values]).asnumpy() * w).sum())

    for i, a in enumerate(arrays):
        numeric = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [v.copy() for v in arrays]
            minus = [v.copy() for v in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            numeric[idx] = (loss(plus) - loss(minus)) / (2 * eps)
        np.testing.assert_allclose(xs[i].grad.asnumpy(), numeric, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i}")


# (id, function, input arrays): every case is checked against central differences.
CASES = [
    ("sin", nd.sin, [_rand(2, 3)]),
    ("exp_log", lambda x: nd.log(nd.exp(x) + 2), [_rand(2, 3)]),
    ("tanh_sigmoid", lambda x: nd.tanh(x) * nd.sigmoid(x), [_rand(5)]),
    ("sqrt_reciprocal", lambda x: nd.sqrt(x) + nd.reciprocal(x), [_rand(4, low=0.5, high=2)]),
    ("relu_abs", lambda x: nd.relu(x) + nd.abs(x) * 0.5, [np.array([-0.7, -0.2, 0.3, 0.9])]),
    ("square", nd.square, [_rand(3)]),
    ("mul_div_sub", lambda a, b: a * b - a / b + (b - a), [_rand(2, 3), _rand(2, 3, low=0.5, high=2)]),
    ("power", lambda a, b: a ** b, [_rand(4, low=0.5, high=2), _rand(4)]),
    ("maximum", nd.broadcast_maximum, [np.array([0.1, 0.9, -0.3]), np.array([0.5, 0.2, -0.6])]),
    ("scalars", lambda x: (2 - x) * 3 + 1 / x + x ** 2 - x / 4, [_rand(5, low=0.5, high=2)]),
    ("broadcast_add", lambda a, b: a + b, [_rand(3, 1), _rand(1, 4)]),
    ("broadcast_mul", lambda a, b: a * b, [_rand(2, 3), _rand(1, 3)]),
    ("broadcast_div_sub", lambda a, b: a / b - b, [_rand(2, 3), _rand(2, 1, low=0.5, high=2)]),
    ("broadcast_to", lambda a: nd.broadcast_to(a, shape=(3, 4)), [_rand(1, 4)]),
    ("sum_axis", lambda x: nd.sum(x, axis=1), [_rand(2, 3, 4)]),
    ("sum_keepdims", lambda x: nd.sum(x, axis=(0, 2), keepdims=True), [_rand(2, 3, 4)]),
    ("mean_all", lambda x: nd.mean(x) * x, [_rand(2, 3)]),
    ("max_axis", lambda x: nd.max(x, axis=0), [np.array([[0.1, 0.9], [0.5, -0.2], [0.3, 0.4]])]),
    ("norm", lambda x: nd.norm(x), [_rand(2, 3)]),
    ("basic_slices", lambda x: x[1] * x[0] + x[1:3].sum(axis=0), [_rand(3, 4)]),
    ("reshape_transpose", lambda x: nd.transpose(x.reshape((3, 2))) * 2, [_rand(2, 3)]),
    ("slice_axis", lambda x: nd.slice_axis(x, axis=1, begin=1, end=3), [_rand(2, 4)]),
    ("slice", lambda x: nd.slice(x, begin=(0, 1), end=(2, 3)), [_rand(3, 4)]),
    ("expand_flatten", lambda x: nd.flatten(nd.expand_dims(x, axis=1)), [_rand(2, 3)]),
    ("concat", lambda a, b: nd.concat(a, b * 2, dim=1), [_rand(2, 1), _rand(2, 3)]),
    ("stack_split", lambda a, b: nd.stack(a, b, axis=0), [_rand(2, 2), _rand(2, 2)]),
    ("tile_flip", lambda x: nd.flip(nd.tile(x, reps=(2, 1)), axis=1), [_rand(2, 3)]),
    ("dot", nd.dot, [_rand(2, 3), _rand(3, 4)]),
    ("dot_transpose_b", lambda a, b: nd.dot(a, b, transpose_b=True), [_rand(2, 3), _rand(4, 3)]),
    ("batch_dot", nd.batch_dot, [_rand(2, 2, 3), _rand(2, 3, 2)]),
    ("softmax", lambda x: nd.softmax(x, axis=-1), [_rand(2, 4)]),
    ("log_softmax", lambda x: nd.log_softmax(x), [_rand(2, 4)]),
    ("fully_connected", lambda x, w, b: nd.FullyConnected(x, w, b, num_hidden=4),
     [_rand(3, 5), _rand(4, 5), _rand(4)]),
    ("fully_connected_flatten", lambda x, w: nd.FullyConnected(x, w, no_bias=True, num_hidden=2),
     [_rand(2, 2, 3), _rand(2, 6)]),
    ("convolution", lambda x, w, b: nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=2),
     [_rand(1, 2, 4, 4), _rand(2, 2, 3, 3), _rand(2)]),
    ("convolution_stride", lambda x, w: nd.Convolution(x, w, kernel=(2, 2), stride=(2, 2), num_filter=1,
                                                       no_bias=True),
     [_rand(2, 1, 4, 4), _rand(1, 1, 2, 2)]),
    ("pooling_max", lambda x: nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max"),
     [RNG.permutation(32).reshape(1, 2, 4, 4) / 32.0]),
    ("pooling_avg", lambda x: nd.Pooling(x, kernel=(2, 2), pool_type="avg"), [_rand(1, 1, 3, 3)]),
    ("activation", lambda x: nd.Activation(x, act_type="softrelu"), [_rand(6)]),
    ("leaky_relu", lambda x: nd.LeakyReLU(x, slope=0.1), [np.array([-0.5, -0.1, 0.2, 0.8])]),
    ("layer_norm", lambda x, g, b: nd.LayerNorm(x, g, b), [_rand(2, 4), _rand(4), _rand(4)]),
    ("embedding", lambda w: nd.Embedding(nd.array([[0, 2], [2, 1]], dtype="float64"), w,
                                         input_dim=3, output_dim=2), [_rand(3, 2)]),
    ("pick", lambda x: nd.pick(x, nd.array([0, 2], dtype="float64"), axis=1), [_rand(2, 3)]),
    ("take", lambda x: nd.take(x, nd.array([1, 0, 1], dtype="float64")), [_rand(2, 3)]),
]


@pytest.mark.parametrize("fn,arrays", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gradient_matches_central_differences(fn, arrays):
    """Recorded gradients of each case equal central differences of the forward."""
    check_grad(fn, *arrays)


def test_batch_norm_gradient_in_training_mode():
    """BatchNorm under record() differentiates through the batch statistics (data, gamma, beta)."""
    aux = [nd.zeros((3,), dtype="float64"), nd.ones((3,), dtype="float64")]
    check_grad(lambda x, g, b: nd.BatchNorm(x, g, b, *aux, fix_gamma=False, eps=1e-5),
               _rand(4, 3), _rand(3, low=0.5, high=1.5), _rand(3), train=True, rtol=1e-4)


def test_batch_norm_uses_batch_statistics_under_record():
    """Under record() BatchNorm normalises by the batch and updates the moving statistics;
    in predict mode it uses the moving statistics and leaves them alone."""
    x = nd.array(_rand(8, 2) * 3 + 5)
    gamma, beta = nd.ones((2,)), nd.zeros((2,))
    mean, var = nd.zeros((2,)), nd.ones((2,))
    x.attach_grad()
    with ag.record():
        y = nd.BatchNorm(x, gamma, beta, mean, var, momentum=0.9)
    np.testing.assert_allclose(y.asnumpy().mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(mean.asnumpy(), 0.1 * x.asnumpy().mean(axis=0), rtol=1e-5)
    y.backward()
    # d/dx of sum(normalised x) is zero: the batch mean absorbs any uniform shift.
    np.testing.assert_allclose(x.grad.asnumpy(), 0, atol=1e-4)
    before = mean.asnumpy()
    z = nd.BatchNorm(x, gamma, beta, mean, var)
    expect = (x.asnumpy() - before) / np.sqrt(var.asnumpy() + 1e-3)
    np.testing.assert_allclose(z.asnumpy(), expect, rtol=1e-5)
    np.testing.assert_allclose(mean.asnumpy(), before)


def test_dropout_follows_the_training_flag_not_recording():
    """Dropout drops under record() and train_mode(), never under record(train_mode=False)."""
    x = nd.ones((2000,))
    x.attach_grad()
    with ag.record(train_mode=False):
        assert (nd.Dropout(x, p=0.5).asnumpy() == 1).all()
    with ag.train_mode():
        dropped = (nd.Dropout(x, p=0.5).asnumpy() == 0).mean()
    assert 0.4 < dropped < 0.6
    with ag.record():
        with ag.pause():
            assert (nd.Dropout(x, p=0.5).asnumpy() == 1).all()
        y = nd.Dropout(x, p=0.5)
    y.backward()
    out = y.asnumpy()
    assert 0.4 < (out == 0).mean() < 0.6
    np.testing.assert_allclose(x.grad.asnumpy(), out)   # dy/dx is the scaled mask, which y shows


def test_softmax_output_gradient_is_softmax_minus_onehot():
    """SoftmaxOutput is a loss layer: backward ignores head gradients and gives softmax - onehot."""
    data = _rand(3, 4)
    x = nd.array(data)
    x.attach_grad()
    label = nd.array([1, 0, 3])
    with ag.record():
        y = nd.SoftmaxOutput(x, label)
    y.backward()
    p = np.exp(data) / np.exp(data).sum(axis=1, keepdims=True)
    p[np.arange(3), [1, 0, 3]] -= 1
    np.testing.assert_allclose(x.grad.asnumpy(), p, rtol=1e-5, atol=1e-6)


def test_mlp_step_closed_form():
    """Two-layer network, mean squared error: autograd's weight gradients equal the closed form."""
    xs, t = _rand(5, 3), _rand(5, 2)
    w1, w2 = _rand(4, 3), _rand(2, 4)
    params = [nd.array(w1), nd.array(w2)]
    for p in params:
        p.attach_grad()
    with ag.record():
        h = nd.relu(nd.FullyConnected(nd.array(xs), params[0], no_bias=True, num_hidden=4))
        out = nd.FullyConnected(h, params[1], no_bias=True, num_hidden=2)
        loss = nd.sum(nd.square(out - nd.array(t))) / 5
    loss.backward()
    hh = np.maximum(xs @ w1.T, 0)
    dout = 2 * (hh @ w2.T - t) / 5
    dh = (dout @ w2) * (hh > 0)
    np.testing.assert_allclose(params[1].grad.asnumpy(), dout.T @ hh, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(params[0].grad.asnumpy(), dh.T @ xs, rtol=1e-4, atol=1e-6)


def test_training_loop_reaches_least_squares_solution():
    """Record, backward and an in-place update outside record, repeated: w converges to lstsq."""
    xs = _rand(20, 3)
    t = xs @ np.array([1.5, -2.0, 0.5]) + 0.01 * _rand(20)
    x, target = nd.array(xs), nd.array(t)
    w = nd.zeros((3,))
    w.attach_grad()
    for _ in range(300):
        with ag.record():
            loss = nd.sum(nd.square(nd.dot(x, w) - target)) / 20
        loss.backward()
        w -= 0.5 * w.grad
    np.testing.assert_allclose(w.asnumpy(), np.linalg.lstsq(xs, t, rcond=None)[0], rtol=1e-3, atol=1e-4)


def test_backward_dependencies_follow_the_op_not_only_the_parameter_dict():
    """The dependencies are looked up by the parameter dict's identity first; one dict object used
    with two operators, or two arities, still gives each its own answer."""
    from mxref.ops import registry
    shared = {}
    relu = ag._backward_deps(registry.get("relu"), shared, 1, 1)
    add = ag._backward_deps(registry.get("elemwise_add"), shared, 2, 1)
    mul = ag._backward_deps(registry.get("elemwise_mul"), shared, 2, 1)
    assert relu == (frozenset(), frozenset({0}))            # relu's backward reads its output
    assert add == (frozenset(), frozenset())                # the sum's backward reads nothing
    assert mul == (frozenset({0, 1}), frozenset())          # the product's reads both inputs
    assert ag._backward_deps(registry.get("relu"), shared, 1, 1) == relu
