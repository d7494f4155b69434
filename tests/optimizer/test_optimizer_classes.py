"""Each optimizer class over several steps: MXNet 1.9.1's weights, and numpy versions of the formulas
with rescale, clip, wd, lr_mult/wd_mult, schedules and multi-precision."""
import json
import math
import os
import warnings

import numpy as np
import pytest

import mxref as mx
from mxref import lr_scheduler
from mxref import optimizer as opt

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "optimizer", "optimizers.npz")
DATA = np.load(FIXTURE)
META = json.loads(str(DATA["__cases__"]))
NAMES = {int(k): v for k, v in META["names"].items()}


@pytest.mark.parametrize("case", META["cases"], ids=[c["name"] for c in META["cases"]])
def test_optimizer_matches_mxnet(case):
    """``get_updater(create(name, ...))`` over 4 steps on a *_weight and a *_bias gives MXNet 1.9.1's
    weights (fixture made by tests/fixtures/optimizer/make_fixtures.py with the same calls)."""
    n, dt, kw = case["name"], case["dtype"], dict(case["kwargs"])
    if case["lr_scheduler"]:
        kw["lr_scheduler"] = lr_scheduler.FactorScheduler(**case["lr_scheduler"][1])
    o = opt.create(case["optimizer"], param_idx2name=NAMES, **kw)
    if case["lr_mult"]:
        o.set_lr_mult(case["lr_mult"])
    if case["wd_mult"]:
        o.set_wd_mult(case["wd_mult"])
    updater = opt.get_updater(o)
    w = {i: mx.nd.array(DATA[f"{n}/w{i}_0"], dtype=dt) for i in NAMES}
    for step in range(META["steps"]):
        for i in NAMES:
            updater(i, mx.nd.array(DATA[f"{n}/g{i}_{step}"], dtype=dt), w[i])
            got, want = w[i].asnumpy(), DATA[f"{n}/w{i}_{step + 1}"]
            assert got.dtype == want.dtype
            tol = 1e-3 if dt == "float16" else 1e-5
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * 1e-1)


# ---- numpy formulas ------------------------------------------------------------------------

RNG = np.random.default_rng(11)
SHAPES = {0: (3, 4), 1: (4,)}


def _clip(x, c):
    return np.clip(x, -c, c) if c is not None else x


def np_sgd(w, g, st, t, lr, wd, o):
    st.setdefault("m", np.zeros_like(w))
    st["m"] = o.momentum * st["m"] - lr * (_clip(o.rescale_grad * g, o.clip_gradient) + wd * w)
    return w + st["m"]


def np_adam(w, g, st, t, lr, wd, o):
    m, v = st.setdefault("m", np.zeros_like(w)), st.setdefault("v", np.zeros_like(w))
    g = _clip(o.rescale_grad * g + wd * w, o.clip_gradient)
    st["m"], st["v"] = o.beta1 * m + (1 - o.beta1) * g, o.beta2 * v + (1 - o.beta2) * g * g
    lr_t = lr * math.sqrt(1 - o.beta2 ** t) / (1 - o.beta1 ** t)
    return w - lr_t * st["m"] / (np.sqrt(st["v"]) + o.epsilon)


def np_lamb(w, g, st, t, lr, wd, o):
    m, v = st.setdefault("m", np.zeros_like(w)), st.setdefault("v", np.zeros_like(w))
    g = _clip(o.rescale_grad * g, o.clip_gradient)
    st["m"], st["v"] = o.beta1 * m + (1 - o.beta1) * g, o.beta2 * v + (1 - o.beta2) * g * g
    mh, vh = st["m"] / (1 - o.beta1 ** t), st["v"] / (1 - o.beta2 ** t)
    d = mh / (np.sqrt(vh) + o.epsilon) + wd * w
    return w - lr * (np.linalg.norm(w) / np.linalg.norm(d)) * d


def np_rmsprop(w, g, st, t, lr, wd, o):
    n = st.setdefault("n", np.zeros_like(w))
    g = _clip(o.rescale_grad * g + wd * w, o.clip_gradient)
    st["n"] = o.gamma1 * n + (1 - o.gamma1) * g * g
    return w - lr * g / np.sqrt(st["n"] + o.epsilon)


def np_adagrad(w, g, st, t, lr, wd, o):
    h = st.setdefault("h", np.zeros_like(w))
    g = _clip(o.rescale_grad * g, o.clip_gradient)
    st["h"] = h + g * g
    return w - lr * (g / np.sqrt(st["h"] + o.float_stable_eps) + wd * w)


CASES = [
    ("sgd", np_sgd, dict(learning_rate=0.1, momentum=0.9, wd=0.1, rescale_grad=0.25, clip_gradient=0.2)),
    ("sgd", np_sgd, dict(learning_rate=0.1, momentum=0.0, wd=0.1)),
    ("adam", np_adam, dict(learning_rate=0.05, beta1=0.8, beta2=0.9, wd=0.1, rescale_grad=0.25,
                           clip_gradient=0.2)),
    ("lamb", np_lamb, dict(learning_rate=0.05, beta1=0.8, beta2=0.9, wd=0.1, clip_gradient=0.2)),
    ("rmsprop", np_rmsprop, dict(learning_rate=0.05, gamma1=0.8, wd=0.1, rescale_grad=0.25)),
    ("adagrad", np_adagrad, dict(learning_rate=0.1, wd=0.1, clip_gradient=0.2)),
]


@pytest.mark.parametrize("name,ref,kw", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_optimizer_follows_formula(name, ref, kw):
    """5 steps on two parameters with lr_mult on the bias and names deciding wd: the weight
    decays, the bias does not (wd_mult 0 for non-*_weight names), as numpy computes it."""
    o = opt.create(name, param_idx2name={0: "fc_weight", 1: "fc_bias"}, **kw)
    o.set_lr_mult({"fc_bias": 3.0})
    updater = opt.get_updater(o)
    w = {i: RNG.uniform(-1, 1, s) for i, s in SHAPES.items()}
    nd_w = {i: mx.nd.array(w[i]) for i in SHAPES}
    ref_w = {i: w[i].astype(np.float32).astype(np.float64) for i in SHAPES}
    states = {i: {} for i in SHAPES}
    for t in range(1, 6):
        for i, s in SHAPES.items():
            g = RNG.uniform(-1, 1, s).astype(np.float32).astype(np.float64)
            updater(i, mx.nd.array(g), nd_w[i])
            lr = kw["learning_rate"] * (3.0 if i == 1 else 1.0)
            wd = kw.get("wd", 0.0) if i == 0 else 0.0
            ref_w[i] = ref(ref_w[i], g, states[i], t, lr, wd, o)
            np.testing.assert_allclose(nd_w[i].asnumpy(), ref_w[i], rtol=2e-5, atol=2e-6)


def test_sgd_schedule_drives_learning_rate():
    """With a FactorScheduler, step t uses base*f^floor((t-1)/step); the scheduler sees num_update."""
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    o = opt.SGD(lr_scheduler=sched)
    w = mx.nd.array([10.0])
    updater = opt.get_updater(o)
    expected = 10.0
    for t in range(1, 7):
        updater(0, mx.nd.array([1.0]), w)
        expected -= 0.5 ** ((t - 1) // 2)
        assert w.asnumpy()[0] == pytest.approx(expected)
    assert o.num_update == 6 and o.learning_rate == 0.25


@pytest.mark.parametrize("name", ["sgd", "nag", "adam", "lamb"])
def test_multi_precision_matches_float32_run(name):
    """multi_precision=True on float16 weights tracks a float32 master copy: the float16 weight
    is the rounded float32 result of the same updates on float32 weights."""
    kw = dict(learning_rate=0.01, multi_precision=True)
    if name in ("sgd", "nag"):
        kw["momentum"] = 0.9
    w0 = RNG.uniform(-1, 1, (5,)).astype(np.float16)
    grads = [RNG.uniform(-1, 1, (5,)).astype(np.float16) for _ in range(4)]
    w16, w32 = mx.nd.array(w0, dtype="float16"), mx.nd.array(w0.astype(np.float32))
    u16, u32 = opt.get_updater(opt.create(name, **kw)), opt.get_updater(opt.create(name, **kw))
    for g in grads:
        u16(0, mx.nd.array(g, dtype="float16"), w16)
        u32(0, mx.nd.array(g.astype(np.float32)), w32)
    np.testing.assert_array_equal(w16.asnumpy(), w32.asnumpy().astype(np.float16))
    master = u16.states[0][1] if name in ("sgd", "nag") else u16.states[0][0]
    np.testing.assert_allclose(master.asnumpy(), w32.asnumpy(), rtol=1e-6)


def test_float16_without_multi_precision_warns():
    """Creating float16 state without multi_precision warns, as MXNet does."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.SGD(momentum=0.9).create_state_multi_precision(0, mx.nd.zeros((2,), dtype="float16"))
    assert any("multi_precision" in str(c.message) for c in caught)


def test_adadelta_ignores_learning_rate_and_ftrl_defaults():
    """AdaDelta has no learning rate; Ftrl's default learning rate is 0.1."""
    w1, w2 = mx.nd.array([1.0, -1.0]), mx.nd.array([1.0, -1.0])
    opt.get_updater(opt.AdaDelta(learning_rate=5.0))(0, mx.nd.array([0.3, 0.3]), w1)
    opt.get_updater(opt.AdaDelta(learning_rate=0.001))(0, mx.nd.array([0.3, 0.3]), w2)
    np.testing.assert_array_equal(w1.asnumpy(), w2.asnumpy())
    assert opt.Ftrl().lr == 0.1 and opt.Adam().lr == 0.001 and opt.SGD().lr == 0.01
