"""``LARS``: layer-wise scaled momentum SGD through multi_sum_sq / multi_lars / preloaded_multi_sgd_*
(numpy formula over steps), names that skip the scaling, momentum correction, aggregation, mp."""
import os
from unittest import mock

import numpy as np
import pytest
from opt_steps import check_multi_precision, run_and_compare

import mxref as mx
from mxref import lr_scheduler
from mxref import optimizer as opt


def np_lars(w, g, st, t, lr, wd, o, shared, name="fc_weight"):
    if not name.endswith(("gamma", "beta", "bias")):
        w_norm = np.sqrt(np.sum(w.astype(np.float32) ** 2))
        g_norm = np.sqrt(np.sum(g.astype(np.float32) ** 2)) * o.rescale_grad
        if w_norm > 0 and g_norm > 0:
            lr = lr * o.eta * w_norm / (g_norm + wd * w_norm + o.eps)
    lr = float(np.float32(lr))          # the rates travel in a float32 array
    gc = o.rescale_grad * g
    if o.clip_gradient:
        gc = np.clip(gc, -o.clip_gradient, o.clip_gradient)
    st["m"] = o.momentum * st.get("m", 0) - lr * wd * w - lr * gc
    return w + st["m"]


def _by_index(w, g, st, t, lr, wd, o, shared):
    return np_lars(w, g, st, t, lr, wd, o, shared, "fc_weight" if w.ndim == 2 else "fc_bias")


@pytest.mark.parametrize("kw", [dict(learning_rate=0.1, eta=0.01, momentum=0.9, wd=0.01),
                                dict(learning_rate=0.5, eta=0.1, rescale_grad=0.5, clip_gradient=0.3,
                                     eps=1e-3),
                                dict(learning_rate=0.2, eta=0.001)])
def test_lars_follows_formula(kw):
    """The weight's rate is scaled by eta*|w|/(|g|+wd*|w|+eps); the bias keeps lr*lr_mult."""
    run_and_compare("lars", _by_index, kw, rtol=1e-4, atol=1e-6)


def test_lars_defaults_and_wd_only_for_weights():
    """MXNet's defaults; only *_weight names keep weight decay (gamma too gets none here)."""
    o = opt.LARS(param_idx2name={0: "a_weight", 1: "bn_gamma", 2: "a_bias"}, wd=0.1)
    assert (o.eta, o.eps, o.momentum, o.momentum_correction, o.aggregate_num) == (0.001, 0, 0.0, True, 4)
    assert o._get_wds([0, 1, 2]) == [0.1, 0.0, 0.0]


def test_lars_momentum_correction_under_a_scheduler():
    """With a schedule the momentum is scaled by lr_t / lr_{t-1} (on a bias: no LARS scaling)."""
    sched, twin = (lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0) for _ in range(2))
    o = opt.LARS(momentum=0.9, lr_scheduler=sched, param_idx2name={0: "fc_bias"})
    updater = opt.get_updater(o)
    w, ref, mom, last = mx.nd.array([1.0, -2.0]), np.array([1.0, -2.0]), 0.0, None
    for t in range(1, 5):
        g = np.array([0.5, 0.25]) * t
        updater(0, mx.nd.array(g), w)
        lr = twin(t)
        momentum = 0.9 * (lr / last) if last else 0.9
        mom = momentum * mom - lr * g
        ref, last = ref + mom, lr
        np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-6)


def _run_lars(size, weights, grads):
    with mock.patch.dict(os.environ, {"MXNET_OPTIMIZER_AGGREGATION_SIZE": str(size)}):
        o = opt.LARS(learning_rate=0.1, momentum=0.9, eta=0.01, wd=0.01,
                     param_idx2name={i: f"l{i}_{'bias' if i % 3 == 2 else 'weight'}" for i in range(6)})
    updater = opt.get_updater(o)
    ws = [mx.nd.array(w) for w in weights]
    for step in range(3):
        updater(list(range(6)), [mx.nd.array(g * (step + 1)) for g in grads], ws)
    return [w.asnumpy() for w in ws], o


def test_lars_aggregation_size_does_not_change_the_bits():
    """Six weights in chunks of 4, 2 or 1 (MXNET_OPTIMIZER_AGGREGATION_SIZE): the same bits."""
    rng = np.random.default_rng(5)
    weights = [rng.uniform(-1, 1, (i + 2, 3)).astype(np.float32) for i in range(6)]
    grads = [rng.uniform(-1, 1, w.shape).astype(np.float32) for w in weights]
    base, o = _run_lars(4, weights, grads)
    assert o.aggregate_num == 4
    for size in (2, 1):
        for a, b in zip(base, _run_lars(size, weights, grads)[0]):
            np.testing.assert_array_equal(a, b)


def test_lars_multi_precision():
    """Without momentum on a bias (no scaling) float16 is exactly the rounded float32 run; with
    scaling, the norms are taken of the float16 weight (as MXNet does), so the float32 master copy
    stays close to the float32 run and the weight is that master copy rounded."""
    check_multi_precision("lars", learning_rate=0.1, momentum=0.9, param_idx2name={0: "fc_bias"})
    rng = np.random.default_rng(2)
    w0 = rng.uniform(-1, 1, (6,)).astype(np.float16)
    w16, w32 = mx.nd.array(w0, dtype="float16"), mx.nd.array(w0.astype(np.float32))
    kw = dict(learning_rate=0.1, momentum=0.9, eta=0.01, multi_precision=True)
    u16, u32 = opt.get_updater(opt.LARS(**kw)), opt.get_updater(opt.LARS(**kw))
    for _ in range(3):
        g = rng.uniform(-1, 1, (6,)).astype(np.float16)
        u16([0], [mx.nd.array(g, dtype="float16")], [w16])
        u32([0], [mx.nd.array(g.astype(np.float32))], [w32])
    mom, master = u16.states[0]
    assert w16.dtype == np.float16 and master.dtype == np.float32 and mom.dtype == np.float32
    np.testing.assert_array_equal(w16.asnumpy(), master.asnumpy().astype(np.float16))
    np.testing.assert_allclose(master.asnumpy(), w32.asnumpy(), rtol=2e-3, atol=1e-4)
