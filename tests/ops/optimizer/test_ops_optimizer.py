"""Optimizer update operators: MXNet 1.9.1 numbers, numpy formulas, in-place states, engine order, errors."""
import json
import os

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.ops import registry

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "optimizer", "update_ops.npz")
DATA = np.load(FIXTURE)
META = json.loads(str(DATA["__cases__"]))
CASES = {c["name"]: c for c in META["ops"]}


def _nd(a):
    return mx.nd.array(a, dtype=a.dtype)


@pytest.mark.parametrize("name", sorted(CASES))
def test_update_ops_match_mxnet(name):
    """Three steps of each operator (called as the optimizers call it, in place) give MXNet
    1.9.1's weights and states (fixture: tests/fixtures/optimizer/make_fixtures.py)."""
    case = CASES[name]
    fn = getattr(mx.nd, case["op"])
    w = _nd(DATA[f"{name}/w0"])
    states = [_nd(DATA[f"{name}/s{j}_0"]) for j in range(len(case["states"]))]
    for i in range(3):
        g = _nd(DATA[f"{name}/g{i}"])
        if case["op"].startswith("lamb"):
            res = fn(w, g, *states, t=i + 1, **case["kwargs"])
            np.testing.assert_allclose(res.asnumpy(), DATA[f"{name}/out{i + 1}"], rtol=1e-5, atol=1e-6)
        else:
            fn(w, g, *states, out=w, **case["kwargs"])
            np.testing.assert_allclose(w.asnumpy().astype(np.float32), DATA[f"{name}/w{i + 1}"],
                                       rtol=1e-5, atol=1e-6)
        for j, s in enumerate(states):
            np.testing.assert_allclose(s.asnumpy(), DATA[f"{name}/s{j}_{i + 1}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("k", range(4))
def test_lamb_phase2_matches_mxnet(k):
    """lamb_update_phase2 with the trust ratio, a zero norm (ratio 1) and both bounds (MXNet 1.9.1)."""
    c = META["lamb_phase2"][k]
    kw = {a: b for a, b in c.items() if a not in ("r1", "r2")}
    res = mx.nd.lamb_update_phase2(_nd(DATA["lamb_phase2/w"]), _nd(DATA["lamb_phase2/g"]),
                                   mx.nd.array([c["r1"]]), mx.nd.array([c["r2"]]), **kw)
    np.testing.assert_allclose(res.asnumpy(), DATA[f"lamb_phase2/out{k}"], rtol=1e-6)


# ---- the same operators against numpy written from the formulas in their docstrings ----------

RNG = np.random.default_rng(3)
W0 = RNG.uniform(-1, 1, (4, 5))
GRADS = [RNG.uniform(-2, 2, (4, 5)) for _ in range(3)]


def _clip(x, c):
    return np.clip(x, -c, c) if c >= 0 else x


def ref_sgd_mom(w, g, st, lr, momentum, wd, rescale_grad, clip_gradient):
    (mom,) = st
    mom[:] = momentum * mom - lr * (_clip(rescale_grad * g, clip_gradient) + wd * w)
    return w + mom


def ref_adam(w, g, st, lr, beta1, beta2, epsilon, wd, rescale_grad, clip_gradient):
    m, v = st
    g = _clip(rescale_grad * g + wd * w, clip_gradient)
    m[:] = beta1 * m + (1 - beta1) * g
    v[:] = beta2 * v + (1 - beta2) * g * g
    return w - lr * m / (np.sqrt(v) + epsilon)


def ref_rmsprop(w, g, st, lr, gamma1, epsilon, wd, rescale_grad, clip_gradient, clip_weights):
    (n,) = st
    g = _clip(rescale_grad * g + wd * w, clip_gradient)
    n[:] = gamma1 * n + (1 - gamma1) * g * g
    return _clip(w - lr * g / np.sqrt(n + epsilon), clip_weights)


def ref_ftrl(w, g, st, lr, lamda1, beta, wd, rescale_grad, clip_gradient):
    z, n = st
    g = _clip(rescale_grad * g, clip_gradient)
    z[:] = z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
    n[:] = n + g * g
    return np.where(np.abs(z) > lamda1, (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd), 0)


def ref_signum(w, g, st, lr, momentum, wd, rescale_grad, clip_gradient, wd_lh):
    (mom,) = st
    g = _clip(rescale_grad * g, clip_gradient)
    mom[:] = momentum * mom - (1 - momentum) * (wd * w + g)
    return (1 - lr * wd_lh) * w + lr * np.sign(mom)


def ref_adagrad(w, g, st, lr, epsilon, wd, rescale_grad, clip_gradient):
    (h,) = st
    g = _clip(rescale_grad * g, clip_gradient)
    h[:] = h + g * g
    return w - lr * (g / np.sqrt(h + epsilon) + wd * w)


def ref_adadelta(w, g, st, rho, epsilon, wd, rescale_grad, clip_gradient):
    acc_g, acc_d = st
    g = _clip(rescale_grad * g, clip_gradient)
    acc_g[:] = rho * acc_g + (1 - rho) * g * g
    d = np.sqrt(acc_d + epsilon) / np.sqrt(acc_g + epsilon) * g
    acc_d[:] = rho * acc_d + (1 - rho) * d * d
    return w - d - wd * w


FORMULAS = [
    ("sgd_mom_update", ref_sgd_mom, 1, dict(lr=0.1, momentum=0.9, wd=0.02, rescale_grad=0.5,
                                            clip_gradient=0.6)),
    ("adam_update", ref_adam, 2, dict(lr=0.05, beta1=0.8, beta2=0.9, epsilon=1e-6, wd=0.02,
                                      rescale_grad=0.5, clip_gradient=0.6)),
    ("rmsprop_update", ref_rmsprop, 1, dict(lr=0.05, gamma1=0.8, epsilon=1e-6, wd=0.02,
                                            rescale_grad=0.5, clip_gradient=0.6, clip_weights=0.7)),
    ("ftrl_update", ref_ftrl, 2, dict(lr=0.2, lamda1=0.1, beta=1.0, wd=0.02, rescale_grad=0.5,
                                      clip_gradient=0.6)),
    ("signum_update", ref_signum, 1, dict(lr=0.05, momentum=0.7, wd=0.02, rescale_grad=0.5,
                                          clip_gradient=0.6, wd_lh=0.1)),
    ("_adagrad_update", ref_adagrad, 1, dict(lr=0.1, epsilon=1e-7, wd=0.02, rescale_grad=0.5,
                                             clip_gradient=0.6)),
    ("_adadelta_update", ref_adadelta, 2, dict(rho=0.8, epsilon=1e-5, wd=0.02, rescale_grad=0.5,
                                               clip_gradient=0.6)),
]


@pytest.mark.parametrize("op,ref,nstates,kw", FORMULAS, ids=[f[0] for f in FORMULAS])
def test_kernels_follow_their_formulas(op, ref, nstates, kw):
    """Calling each kernel directly for three steps (float64) equals the numpy formula."""
    kernel = registry.get_kernel(registry.get(op), "cpu")
    params = registry.get(op).parse_params(kw)
    w, w_ref = W0.copy(), W0.copy()
    st = [np.zeros_like(W0) for _ in range(nstates)]
    st_ref = [np.zeros_like(W0) for _ in range(nstates)]
    for g in GRADS:
        kernel(None, params, [w, g, *st], [w], ["write"])
        w_ref = ref(w_ref, g, st_ref, **kw)
        np.testing.assert_allclose(w, w_ref, rtol=1e-12, atol=1e-14)
        for s, s_ref in zip(st, st_ref):
            np.testing.assert_allclose(s, s_ref, rtol=1e-12, atol=1e-14)


def test_sgd_clips_before_weight_decay():
    """sgd_update: wd*w is added after the clip (item 7): a huge gradient is clipped, decay is not."""
    w = mx.nd.array([[2.0, -2.0]])
    mx.nd.sgd_update(w, mx.nd.array([[100.0, -100.0]]), out=w, lr=0.1, wd=0.5, clip_gradient=1.0)
    np.testing.assert_allclose(w.asnumpy(), [[2 - 0.1 * (1 + 0.5 * 2), -2 + 0.1 * (1 + 0.5 * 2)]], rtol=1e-6)


def test_adam_clips_after_weight_decay():
    """adam_update: wd*w is added before the clip (item 8), so the clipped sum bounds the step."""
    w, m, v = mx.nd.array([3.0]), mx.nd.zeros((1,)), mx.nd.zeros((1,))
    mx.nd.adam_update(w, mx.nd.array([0.5]), m, v, out=w, lr=0.1, beta1=0.5, beta2=0.5, epsilon=0.0,
                      wd=1.0, clip_gradient=1.0)
    assert m.asnumpy()[0] == pytest.approx(0.5)    # (1 - beta1) * clip(0.5 + 3.0, 1.0)
    assert w.asnumpy()[0] == pytest.approx(3.0 - 0.1 * 0.5 / np.sqrt(0.5))


def test_mp_sgd_keeps_float32_master_copy():
    """mp_sgd_update: tiny steps accumulate in weight32 even when float16 cannot represent them."""
    w16 = mx.nd.array(np.ones(3), dtype="float16")
    w32 = mx.nd.array(np.ones(3), dtype="float32")
    for _ in range(10):
        mx.nd.mp_sgd_update(w16, mx.nd.array(np.ones(3), dtype="float16"), w32, out=w16, lr=1e-4)
    np.testing.assert_allclose(w32.asnumpy(), 1 - 10e-4, rtol=1e-6)
    assert w16.dtype == np.float16
    np.testing.assert_array_equal(w16.asnumpy(), w32.asnumpy().astype(np.float16))


def test_updates_are_ordered_engine_operations():
    """Many in-place updates pushed back to back give the sequential result (states are written
    vars, so the engine serialises them), including a read of the weight in between."""
    w, mom = mx.nd.array(W0), mx.nd.zeros(W0.shape)
    snapshots = []
    for g in GRADS * 3:
        mx.nd.sgd_mom_update(w, mx.nd.array(g), mom, out=w, lr=0.05, momentum=0.9)
        snapshots.append(w.copy())
    w_ref, st = W0.astype(np.float32), [np.zeros(W0.shape, np.float32)]
    for g, snap in zip(GRADS * 3, snapshots):
        w_ref = ref_sgd_mom(w_ref, g.astype(np.float32), st, 0.05, 0.9, 0.0, 1.0, -1.0)
        np.testing.assert_allclose(snap.asnumpy(), w_ref, rtol=1e-5, atol=1e-6)


def test_update_op_metadata():
    """States are the ops' mutated inputs (aux states), the output may share the weight."""
    op = registry.get("mp_sgd_mom_update")
    params = op.parse_params({"lr": 0.1})
    assert op.list_arguments(params) == ["weight", "grad"]
    assert op.list_aux_states(params) == ["mom", "weight32"]
    assert op.mutate_inputs(params) == [2, 3]
    assert op.inplace == ((0, 0),)
    assert registry.get("sgd_update").params["clip_gradient"].default == -1.0


def test_bad_inputs_raise():
    """Shape/dtype mismatches and missing required parameters raise MXNetError naming the op."""
    w = mx.nd.zeros((2, 3))
    with pytest.raises(MXNetError, match="sgd_mom_update"):
        mx.nd.sgd_mom_update(w, mx.nd.zeros((2, 3)), mx.nd.zeros((3, 2)), lr=0.1)
    with pytest.raises(MXNetError, match="lr"):
        mx.nd.sgd_update(w, mx.nd.zeros((2, 3)))
    with pytest.raises(MXNetError, match="float32"):
        mx.nd.mp_sgd_update(w.astype("float16"), mx.nd.zeros((2, 3), dtype="float16"),
                            mx.nd.zeros((2, 3), dtype="float16"), lr=0.1)
    with pytest.raises(MXNetError, match="r1"):
        mx.nd.lamb_update_phase2(w, w, mx.nd.zeros((2,)), mx.nd.zeros((1,)), lr=0.1)


@pytest.mark.parametrize("op,nstates,kw", [("sgd_update", 0, {}), ("sgd_mom_update", 1, {"momentum": 0.9}),
                                           ("adam_update", 2, {})])
def test_req_modes_and_separate_output(op, nstates, kw):
    """Kernels honour req: 'write' into a separate output leaves the weight unchanged, 'add' adds
    the new weight to the output, 'null' writes nothing (states still advance)."""
    opdef = registry.get(op)
    kernel, params = registry.get_kernel(opdef, "cpu"), opdef.parse_params(dict(kw, lr=0.1))
    w, g = W0.astype(np.float32), GRADS[0].astype(np.float32)

    def run(req, out):
        st = [np.zeros_like(w) for _ in range(nstates)]
        weight = w.copy()
        kernel(None, params, [weight, g, *st], [out], [req])
        np.testing.assert_array_equal(weight, w)
        return out

    new = run("write", np.zeros_like(w))
    np.testing.assert_allclose(run("add", np.ones_like(w)), new + 1, rtol=1e-6)
    np.testing.assert_array_equal(run("null", np.full_like(w, 3.0)), 3.0)
    inplace = w.copy()
    kernel(None, params, [inplace, g, *[np.zeros_like(w) for _ in range(nstates)]], [inplace], ["write"])
    np.testing.assert_array_equal(inplace, new)
