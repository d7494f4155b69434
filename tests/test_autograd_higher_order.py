"""Second (and third) derivatives through autograd.grad(create_graph=True): the _backward_* ops of
the unary math ops, of elemwise_mul and of the scalar powers have gradients, checked against closed
forms (values agree with MXNet 1.9.1 where it registers the same gradients)."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd as ag
from mxref import nd
from mxref.ops import registry
from mxref.ops.second_order import differentiable_ops


def _var(values):
    x = nd.array(values)
    x.attach_grad()
    return x


def _first_and_second(f, values):
    """(f'(x), f''(x)): f' by grad with create_graph, f'' by backward through f'."""
    x = _var(values)
    with ag.record():
        (dy,) = ag.grad(f(x), [x], create_graph=True)
    dy.backward()
    return dy.asnumpy(), x.grad.asnumpy()


X = np.array([0.3, 0.7, 1.4])
T, S = np.tanh(X), 1 / (1 + np.exp(-X))
# name: (f, f', f'') in closed form
CASES = {
    "sin": (nd.sin, np.cos(X), -np.sin(X)),
    "cos": (nd.cos, -np.sin(X), -np.cos(X)),
    "tan": (nd.tan, 1 / np.cos(X) ** 2, 2 * np.tan(X) / np.cos(X) ** 2),
    "sinh": (nd.sinh, np.cosh(X), np.sinh(X)),
    "cosh": (nd.cosh, np.sinh(X), np.cosh(X)),
    "tanh": (nd.tanh, 1 - T ** 2, -2 * T * (1 - T ** 2)),
    "sigmoid": (nd.sigmoid, S * (1 - S), S * (1 - S) * (1 - 2 * S)),
    "exp": (nd.exp, np.exp(X), np.exp(X)),
    "expm1": (nd.expm1, np.exp(X), np.exp(X)),
    "log": (nd.log, 1 / X, -1 / X ** 2),
    "log10": (nd.log10, 1 / (X * np.log(10)), -1 / (X ** 2 * np.log(10))),
    "log2": (nd.log2, 1 / (X * np.log(2)), -1 / (X ** 2 * np.log(2))),
    "log1p": (nd.log1p, 1 / (1 + X), -1 / (1 + X) ** 2),
    "reciprocal": (nd.reciprocal, -1 / X ** 2, 2 / X ** 3),
    "square": (nd.square, 2 * X, np.full(3, 2.0)),
    "sqrt": (nd.sqrt, 0.5 / np.sqrt(X), -0.25 * X ** -1.5),
    "rsqrt": (nd.rsqrt, -0.5 * X ** -1.5, 0.75 * X ** -2.5),
    "cbrt": (nd.cbrt, X ** (-2 / 3) / 3, -2 / 9 * X ** (-5 / 3)),
    "rcbrt": (nd.rcbrt, -X ** (-4 / 3) / 3, 4 / 9 * X ** (-7 / 3)),
    "arcsin": (lambda x: nd.arcsin(x / 2), 0.5 / np.sqrt(1 - X ** 2 / 4),
               X / 8 * (1 - X ** 2 / 4) ** -1.5),
    "arccos": (lambda x: nd.arccos(x / 2), -0.5 / np.sqrt(1 - X ** 2 / 4),
               -X / 8 * (1 - X ** 2 / 4) ** -1.5),
    "arctan": (nd.arctan, 1 / (1 + X ** 2), -2 * X / (1 + X ** 2) ** 2),
    "arcsinh": (nd.arcsinh, (X ** 2 + 1) ** -0.5, -X * (X ** 2 + 1) ** -1.5),
    "arccosh": (lambda x: nd.arccosh(x + 1), ((X + 1) ** 2 - 1) ** -0.5,
                -(X + 1) * ((X + 1) ** 2 - 1) ** -1.5),
    "arctanh": (lambda x: nd.arctanh(x / 2), 0.5 / (1 - X ** 2 / 4), X / 4 / (1 - X ** 2 / 4) ** 2),
    "relu": (nd.relu, np.ones(3), np.zeros(3)),
    "abs": (lambda x: nd.abs(x - 1), np.sign(X - 1), np.zeros(3)),
    "degrees": (nd.degrees, np.full(3, 180 / np.pi), np.zeros(3)),
    "x**3": (lambda x: x ** 3, 3 * X ** 2, 6 * X),
    "x**-0.5": (lambda x: x ** -0.5, -0.5 * X ** -1.5, 0.75 * X ** -2.5),
    "2/x": (lambda x: 2 / x, -2 / X ** 2, 4 / X ** 3),
    "3**x": (lambda x: 3 ** x, np.log(3) * 3 ** X, np.log(3) ** 2 * 3 ** X),
    "x*x": (lambda x: x * x, 2 * X, np.full(3, 2.0)),
    "3*x*x*x": (lambda x: 3 * x * x * x, 9 * X ** 2, 18 * X),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivative_matches_closed_form(name):
    f, d1, d2 = CASES[name]
    first, second = _first_and_second(f, X)
    np.testing.assert_allclose(first, d1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(second, d2, rtol=1e-4, atol=1e-6)


def test_every_listed_backward_op_has_a_gradient():
    """The table covers the backward ops it names, and each exists in the registry."""
    for name in differentiable_ops():
        assert registry.get(name).gradient is not None, name


def test_third_derivative_of_sin_and_cube():
    """The gradients are graphs of ordinary ops, so they differentiate again: sin''' = -cos,
    (x**3)''' = 6."""
    x = _var(X)
    with ag.record():
        (d1,) = ag.grad(nd.sin(x), [x], create_graph=True)
        (d2,) = ag.grad(d1, [x], create_graph=True)
    d2.backward()
    np.testing.assert_allclose(d2.asnumpy(), -np.sin(X), rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), -np.cos(X), rtol=1e-5)
    x = _var(X)
    with ag.record():
        (d1,) = ag.grad(x ** 3, [x], create_graph=True)
        (d2,) = ag.grad(d1, [x], create_graph=True)
    d2.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.full(3, 6.0), rtol=1e-5)


def test_mixed_partials_of_a_product():
    """f = sum(x*x*y): df/dx = 2xy, and d/dy of sum(df/dx) = 2x (through _backward_mul's gradient)."""
    xv, yv = np.array([1.0, -2.0]), np.array([3.0, 0.5])
    x, y = _var(xv), _var(yv)
    with ag.record():
        (dx,) = ag.grad(x * x * y, [x], create_graph=True)
        total = nd.sum(dx)
    np.testing.assert_allclose(dx.asnumpy(), 2 * xv * yv)
    total.backward()
    np.testing.assert_allclose(y.grad.asnumpy(), 2 * xv)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * yv)


def test_hessian_vector_product_of_tanh_layer():
    """d/dx <grad sum(tanh(w*x)), v> = w^2 * tanh''(wx) * v: a Hessian-vector product."""
    xv, wv, v = np.array([0.2, -0.4]), np.array([1.5, 0.5]), np.array([1.0, 2.0])
    x, w = _var(xv), nd.array(wv)
    with ag.record():
        (g,) = ag.grad(nd.tanh(w * x), [x], create_graph=True)
        hv = nd.sum(g * nd.array(v))
    hv.backward()
    t = np.tanh(wv * xv)
    np.testing.assert_allclose(x.grad.asnumpy(), wv ** 2 * (-2 * t * (1 - t ** 2)) * v, rtol=1e-5)


def test_backward_op_without_gradient_is_named():
    """softsign's backward has no gradient (none in MXNet 1.9.1 either): the error names the op."""
    x = _var(X)
    with ag.record():
        (g,) = ag.grad(nd.softsign(x), [x], create_graph=True)
    with pytest.raises(mx.MXNetError, match="_backward_softsign is non-differentiable"):
        g.backward()


def test_mixed_partials_through_a_broadcast_product():
    """y = x*x*w with w of shape (1,) (broadcast_mul): d/dx sum(dy/dx) = 2w, d/dw sum(dy/dx) = 2 sum(x)."""
    xv = np.array([1.0, -2.0, 0.5])
    x, w = _var(xv), _var([3.0])
    with ag.record():
        (dx,) = ag.grad(nd.broadcast_mul(x * x, w), [x], create_graph=True)
        total = nd.sum(dx)
    np.testing.assert_allclose(dx.asnumpy(), 2 * xv * 3)
    total.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.full(3, 6.0))
    np.testing.assert_allclose(w.grad.asnumpy(), [2 * xv.sum()])


@pytest.mark.parametrize("params", [{"num_hidden": 3}, {"num_hidden": 3, "no_bias": True},
                                    {"num_hidden": 3, "flatten": False}])
def test_backward_fully_connected_gradient_by_central_differences(params):
    """_backward_FullyConnected's own gradient (w.r.t. ograd, data and weight) is checked against
    central differences of the operator."""
    from mxref.op_check import check_op_gradient
    rng = np.random.RandomState(3)
    data = rng.randn(2, 2, 4) if not params.get("flatten", True) else rng.randn(2, 2, 2)
    k = data.shape[-1] if not params.get("flatten", True) else 4
    og_shape = data.shape[:-1] + (3,) if not params.get("flatten", True) else (2, 3)
    check_op_gradient("_backward_FullyConnected", [rng.randn(*og_shape), data, rng.randn(3, k)], params,
                      rtol=1e-5, atol=1e-6)


def test_dense_second_order_matches_closed_form():
    """x_grad = dy W; d/dW <x_grad, v> = dy^T v and, for w_grad = dy^T x, d/dx <w_grad, u> = dy u."""
    rng = np.random.RandomState(0)
    x, w, b = _var(rng.randn(4, 3)), _var(rng.randn(2, 3)), _var(rng.randn(2))
    dy, v, u = rng.randn(4, 2), rng.randn(4, 3), rng.randn(2, 3)
    with ag.record():
        y = nd.FullyConnected(x, w, b, num_hidden=2)
        (gx,) = ag.grad(y, [x], head_grads=nd.array(dy), create_graph=True, retain_graph=True)
        (gww,) = ag.grad(gx, [w], head_grads=nd.array(v), create_graph=False, retain_graph=True)
        (gw,) = ag.grad(y, [w], head_grads=nd.array(dy), create_graph=True, retain_graph=True)
        (gxx,) = ag.grad(gw, [x], head_grads=nd.array(u), create_graph=False)
    np.testing.assert_allclose(gx.asnumpy(), dy @ w.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(gww.asnumpy(), dy.T @ v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gxx.asnumpy(), dy @ u, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [lambda x: nd.clip(x, -0.5, 0.5), lambda x: nd.Dropout(x, p=0.5)])
def test_masking_ops_have_zero_second_derivative(f):
    """clip and Dropout are piecewise linear: their first derivative is a mask (Dropout's the
    scaled keep mask, the same one the forward drew), their second derivative zero."""
    x = _var(np.array([-1.0, -0.2, 0.3, 0.9]))
    with ag.record():
        y = f(x)
        (g,) = ag.grad(y, [x], create_graph=True, retain_graph=True)
    g.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(4))
    ratio = y.asnumpy() / x.asnumpy()
    keep = g.asnumpy() != 0
    np.testing.assert_allclose(g.asnumpy()[keep], ratio[keep] if ratio[keep].size else g.asnumpy()[keep])
