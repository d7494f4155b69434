"""Shared by the optimizer tests: run an optimizer through its ``Updater`` for a few steps on a
``*_weight`` and a ``*_bias`` and compare each step with a numpy reimplementation of the formula."""
import numpy as np

import mxref as mx
from mxref import optimizer as opt

SHAPES = {0: (3, 4), 1: (4,)}
NAMES = {0: "fc_weight", 1: "fc_bias"}


def clip(x, c):
    return np.clip(x, -c, c) if c is not None else x


def run_and_compare(name, ref, kw, steps=5, seed=0, rtol=2e-5, atol=2e-6, bias_lr_mult=3.0):
    """``ref(w, g, state, t, lr, wd, o, shared) -> new w`` (float64 numpy; ``state`` a dict per
    weight, ``shared`` one dict for the optimizer) must track the optimizer step by step. The bias
    gets ``lr_mult`` and, by its name, no weight decay."""
    rng = np.random.default_rng(seed)
    o = opt.create(name, param_idx2name=NAMES, **kw)
    o.set_lr_mult({"fc_bias": bias_lr_mult})
    updater = opt.get_updater(o)
    w = {i: rng.uniform(-1, 1, s).astype(np.float32).astype(np.float64) for i, s in SHAPES.items()}
    nd_w = {i: mx.nd.array(w[i]) for i in SHAPES}
    states, shared = {i: {} for i in SHAPES}, {}
    lr0 = kw.get("learning_rate", o.lr)
    for t in range(1, steps + 1):
        for i, s in SHAPES.items():
            g = rng.uniform(-1, 1, s).astype(np.float32).astype(np.float64)
            updater(i, mx.nd.array(g), nd_w[i])
            lr = lr0 * (bias_lr_mult if i == 1 else 1.0)
            wd = kw.get("wd", 0.0) if i == 0 else 0.0
            w[i] = ref(w[i], g, states[i], t, lr, wd, o, shared)
            np.testing.assert_allclose(nd_w[i].asnumpy(), w[i], rtol=rtol, atol=atol,
                                       err_msg=f"{name} step {t} weight {i}")
    return o, updater


def check_multi_precision(name, steps=4, seed=1, **kw):
    """With ``multi_precision=True`` a float16 weight is the rounded result of the same updates
    run in float32 (the master copy), and the master copy equals that float32 run."""
    rng = np.random.default_rng(seed)
    kw = dict(kw, multi_precision=True)
    w0 = rng.uniform(-1, 1, (6,)).astype(np.float16)
    w16, w32 = mx.nd.array(w0, dtype="float16"), mx.nd.array(w0.astype(np.float32))
    u16, u32 = opt.get_updater(opt.create(name, **kw)), opt.get_updater(opt.create(name, **kw))
    for _ in range(steps):
        g = rng.uniform(-1, 1, (6,)).astype(np.float16)
        u16(0, mx.nd.array(g, dtype="float16"), w16)
        u32(0, mx.nd.array(g.astype(np.float32)), w32)
    assert w16.dtype == np.float16
    np.testing.assert_array_equal(w16.asnumpy(), w32.asnumpy().astype(np.float16))
    return u16, u32
