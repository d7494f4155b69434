"""TripletLoss, PoissonNLLLoss, CosineEmbeddingLoss and SDMLLoss: numpy formulas, MXNet 1.9.1 values
and input gradients, imperative and hybridized."""
import os

import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon

L = gluon.loss
FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gluon",
                       "layers_losses_cells_mxnet191.npz")


def case(name):
    with np.load(FIXTURE) as f:
        return {k.split("/", 1)[1]: f[k] for k in f.files if k.startswith(name + "/")}


def cos(a, b):
    return (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)


def log_softmax(x):
    x = x - x.max(axis=1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


def sdml(a, b, s):
    d = ((a[:, None] - b[None]) ** 2).sum(-1)
    n = len(a)
    q = np.eye(n) * (1 - s) + (1 - np.eye(n)) * s / (n - 1)
    return (q * (np.log(q + 1e-12) - log_softmax(-d))).sum(1)


CASES = {
    "triplet": (lambda: L.TripletLoss(),
                lambda a, b, c: np.maximum(((b - a) ** 2 - (c - a) ** 2).sum(1) + 1, 0)),
    "triplet_margin": (lambda: L.TripletLoss(margin=3, weight=0.5),
                       lambda a, b, c: 0.5 * np.maximum(((b - a) ** 2 - (c - a) ** 2).sum(1) + 3, 0)),
    "poisson": (lambda: L.PoissonNLLLoss(), lambda p, t: np.mean(np.exp(p) - t * p, keepdims=True)[0]),
    "poisson_weighted": (lambda: L.PoissonNLLLoss(weight=2.0),
                         lambda p, t, w: np.mean(2 * w * (np.exp(p) - t * p), keepdims=True)[0]),
    "cosine": (lambda: L.CosineEmbeddingLoss(),
               lambda a, b, y: np.where(y == 1, 1 - cos(a, b), np.maximum(cos(a, b), 0))[:, None]),
    "cosine_margin": (lambda: L.CosineEmbeddingLoss(margin=0.2, weight=2.),
                      lambda a, b, y, w: 2 * w * np.where(y == 1, 1 - cos(a, b),
                                                          np.maximum(cos(a, b) - 0.2, 0))[:, None]),
    "sdml": (lambda: L.SDMLLoss(), lambda a, b: sdml(a, b, 0.3)),
    "sdml_smooth": (lambda: L.SDMLLoss(smoothing_parameter=0.1, weight=0.5),
                    lambda a, b: sdml(a, b, 0.1)),              # weight is unused, as in MXNet
}


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_losses_match_formula_and_mxnet(name, hybridize):
    """The loss equals its formula and MXNet 1.9.1's value, and its input gradient equals MXNet's."""
    if hybridize and name.startswith("sdml"):
        pytest.skip("SDMLLoss reads x1.shape: like MXNet 1.9.1's it runs on NDArrays only")
    build, formula = CASES[name]
    c = case(name)
    inputs = [c[f"in{i}"] for i in range(4) if f"in{i}" in c]
    loss = build()
    if hybridize:
        loss.hybridize()
    xs = [mx.nd.array(v) for v in inputs]
    xs[0].attach_grad()
    with autograd.record():
        out = loss(*xs)
    out.backward()
    want = formula(*[v.astype(np.float64) for v in inputs])
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.asnumpy(), c["out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xs[0].grad.asnumpy(), c["grad"], rtol=1e-4, atol=1e-6)


def test_poisson_full_stirling_term():
    """compute_full adds Stirling's term where target > 1 (MXNet's value; hybridizes here too)."""
    c = case("poisson_full")
    p, t = c["in0"].astype(np.float64), c["in1"].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        stirling = np.where(t > 1, t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t), 0)
    want = np.mean(p - t * np.log(p + 1e-8) + stirling, keepdims=True)[0]
    for hybridize in (False, True):
        loss = L.PoissonNLLLoss(from_logits=False, compute_full=True)
        if hybridize:
            loss.hybridize()
        out = loss(mx.nd.array(c["in0"]), mx.nd.array(c["in1"])).asnumpy()
        np.testing.assert_allclose(out, c["out"], rtol=1e-5)
        np.testing.assert_allclose(out, want, rtol=1e-5)


def test_gradients_by_central_differences():
    """Autograd through the composed losses agrees with central differences (float64)."""
    rng = np.random.RandomState(5)
    a, b, c = (rng.normal(size=(3, 4)) for _ in range(3))
    y = np.array([1, -1, -1.0])
    for loss, args in ((L.TripletLoss(margin=5), (a, b, c)), (L.CosineEmbeddingLoss(margin=-0.5), (a, b, y)),
                       (L.SDMLLoss(), (a, b)), (L.PoissonNLLLoss(), (a, np.abs(b)))):  # all smooth here
        x = mx.nd.array(args[0], dtype="float64")
        x.attach_grad()
        rest = [mx.nd.array(v, dtype="float64") for v in args[1:]]
        with autograd.record():
            out = loss(x, *rest).sum()
        out.backward()

        num = np.zeros_like(args[0])
        for i in np.ndindex(num.shape):
            up, down = args[0].copy(), args[0].copy()
            up[i] += 1e-6
            down[i] -= 1e-6
            f_up, f_down = (loss(mx.nd.array(v, dtype="float64"), *rest).sum().asscalar() for v in (up, down))
            num[i] = (f_up - f_down) / 2e-6
        np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-4, atol=1e-6, err_msg=type(loss).__name__)


def test_symbol_forms_and_bad_input():
    """The losses build symbols with MXNet's output shapes; SDMLLoss wants aligned batches."""
    a, b, y = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("y")
    assert L.TripletLoss()(a, b, y).infer_shape(a=(4, 5), b=(4, 5), y=(4, 5))[1] == [(4,)]
    assert L.CosineEmbeddingLoss()(a, b, y).infer_shape(a=(4, 5), b=(4, 5), y=(4,))[1] == [(4, 1)]
    assert L.PoissonNLLLoss()(a, b).infer_shape(a=(4, 5), b=(4, 5))[1] == [(1,)]
    with pytest.raises(mx.base.MXNetError, match="SDMLLoss"):
        L.SDMLLoss()(mx.nd.ones((3, 4)), mx.nd.ones((2, 4)))
