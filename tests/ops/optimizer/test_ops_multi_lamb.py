"""``_multi_lamb_update`` / ``_multi_mp_lamb_update``: each tensor as lamb_update_phase1, two norms
and lamb_update_phase2 would update it; the LAMB optimizer's fused path equals its single path."""
import numpy as np
import pytest

import mxref as mx
from mxref import optimizer as opt
from mxref.base import MXNetError

SHAPES = [(4, 3), (6,), (2, 5)]


def _phases(w, g, mean, var, t, lr, wd, **kw):
    bounds = {k: kw.pop(k) for k in ("lower_bound", "upper_bound") if k in kw}
    d = mx.nd.lamb_update_phase1(w, g, mean, var, t=t, wd=wd, **kw)
    mx.nd.lamb_update_phase2(w, d, mx.nd.norm(w), mx.nd.norm(d), lr=lr, out=w, **bounds)


@pytest.mark.parametrize("kw", [{}, dict(rescale_grad=0.5, clip_gradient=0.3, bias_correction=False),
                                dict(lower_bound=0.5, upper_bound=1.5, beta1=0.8, epsilon=1e-4)])
def test_multi_lamb_matches_the_two_phases_per_tensor(kw):
    """Three steps over three tensors: weights, means and variances as the per-tensor phases."""
    rng = np.random.default_rng(0)
    init = [rng.uniform(-1, 1, s).astype(np.float32) for s in SHAPES]
    fused = [[mx.nd.array(w), mx.nd.zeros(w.shape), mx.nd.zeros(w.shape)] for w in init]
    alone = [[mx.nd.array(w), mx.nd.zeros(w.shape), mx.nd.zeros(w.shape)] for w in init]
    lrs, wds = (0.1, 0.05, 0.2), (0.01, 0.0, 0.1)
    for t in range(1, 4):
        grads = [mx.nd.array(rng.uniform(-1, 1, s).astype(np.float32)) for s in SHAPES]
        flat = [a for (w, m, v), g in zip(fused, grads) for a in (w, g, m, v)]
        mx.nd._internal._multi_lamb_update(*flat, out=[f[0] for f in fused], num_tensors=3,
                                           step_count=(t,) * 3, learning_rates=lrs, wds=wds, **kw)
        for (w, m, v), g, lr, wd in zip(alone, grads, lrs, wds):
            _phases(w, g, m, v, t, lr, wd, **kw)
    for f, a in zip(fused, alone):
        for x, y in zip(f, a):
            np.testing.assert_allclose(x.asnumpy(), y.asnumpy(), rtol=2e-6, atol=1e-7)


def test_multi_mp_lamb_updates_the_master_copy():
    """float16 weights: the update runs on the float32 master copy, the weight gets it rounded."""
    rng = np.random.default_rng(1)
    w = rng.uniform(-1, 1, (5,)).astype(np.float16)
    arrs = [mx.nd.array(w, dtype="float16"), mx.nd.array(rng.uniform(-1, 1, 5), dtype="float16"),
            mx.nd.zeros(5), mx.nd.zeros(5), mx.nd.array(w.astype(np.float32))]
    ref = [mx.nd.array(w.astype(np.float32)), arrs[1].astype("float32"), mx.nd.zeros(5), mx.nd.zeros(5)]
    mx.nd._internal._multi_mp_lamb_update(*arrs, out=[arrs[0]], num_tensors=1, step_count=(1,),
                                          learning_rates=(0.1,), wds=(0.01,))
    _phases(ref[0], ref[1], ref[2], ref[3], 1, 0.1, 0.01)
    np.testing.assert_allclose(arrs[4].asnumpy(), ref[0].asnumpy(), rtol=1e-6)
    np.testing.assert_array_equal(arrs[0].asnumpy(), arrs[4].asnumpy().astype(np.float16))
    s = mx.sym._internal._multi_mp_lamb_update(*[mx.sym.var(n) for n in "wgmvx"], num_tensors=1,
                                               step_count=(1,), learning_rates=(0.1,), wds=(0.0,))
    assert s.list_arguments() == ["w", "g"] and s.list_auxiliary_states() == ["m", "v", "x"]
    _, outs, aux = s.infer_type(w="float16")
    assert outs == [np.float16] and aux == [np.float32] * 3


def test_errors():
    a = mx.nd.ones((2,))
    with pytest.raises(MXNetError, match="_multi_lamb_update: argument 'step_count' has 2 values"):
        mx.nd._internal._multi_lamb_update(a, a, a, a, num_tensors=1, step_count=(1, 2),
                                           learning_rates=(0.1,), wds=(0.0,))


@pytest.mark.parametrize("mp", [False, True])
def test_lamb_optimizer_fused_path_equals_single_path(mp):
    """The Updater hands LAMB lists (aggregate_num 45): the fused op gives what one update per
    index gives (float16 with multi_precision through the master copies)."""
    rng = np.random.default_rng(2)
    dtype = "float16" if mp else "float32"
    init = [rng.uniform(-1, 1, s) for s in SHAPES]
    kw = dict(learning_rate=0.05, wd=0.01, clip_gradient=0.5, multi_precision=mp)
    lists, singles = opt.get_updater(opt.LAMB(**kw)), opt.get_updater(opt.LAMB(**kw))
    assert lists.optimizer.aggregate_num == 45
    wl = [mx.nd.array(w, dtype=dtype) for w in init]
    ws = [mx.nd.array(w, dtype=dtype) for w in init]
    for _ in range(3):
        grads = [rng.uniform(-1, 1, s) for s in SHAPES]
        lists([0, 1, 2], [mx.nd.array(g, dtype=dtype) for g in grads], wl)
        one = singles.optimizer
        for i, g in enumerate(grads):
            state = singles.states.setdefault(i, one.create_state_multi_precision(i, ws[i]))
            one.update_multi_precision(i, ws[i], mx.nd.array(g, dtype=dtype), state)
    for a, b in zip(wl, ws):
        np.testing.assert_allclose(a.asnumpy().astype(np.float64), b.asnumpy().astype(np.float64),
                                   rtol=1e-3 if mp else 2e-6, atol=1e-3 if mp else 1e-7)
