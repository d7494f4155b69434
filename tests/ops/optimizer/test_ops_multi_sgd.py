"""Fused multi-tensor SGD operators: the same bits as one single-tensor update per weight, MXNet's
input layout (interleaved, mutated states as auxiliary states), ``out=[weights]``, symbols, errors."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError

SHAPES = [(3, 4), (7,), (2, 2, 5)]
LRS, WDS = (0.1, 0.05, 0.2), (0.01, 0.0, 0.003)

# fused op -> (single op, per-weight state kinds)
FAMILY = {
    "multi_sgd_update": ("sgd_update", ()),
    "multi_sgd_mom_update": ("sgd_mom_update", ("mom",)),
    "multi_mp_sgd_update": ("mp_sgd_update", ("weight32",)),
    "multi_mp_sgd_mom_update": ("mp_sgd_mom_update", ("mom", "weight32")),
}


def _arrays(seed, dtype, states):
    rng = np.random.default_rng(seed)
    out = []
    for s in SHAPES:
        w = rng.uniform(-1, 1, s).astype(dtype)
        g = rng.uniform(-2, 2, s).astype(dtype)
        st = [rng.uniform(-0.1, 0.1, s).astype(np.float32) if k == "mom" else w.astype(np.float32)
              for k in states]
        out.append([w, g] + st)
    return out


def _kwargs(name, **extra):
    kw = {"rescale_grad": 0.7, "clip_gradient": 0.9, **extra}
    if "mom" in name:
        kw["momentum"] = 0.9
    return kw


@pytest.mark.parametrize("preloaded", [False, True])
@pytest.mark.parametrize("name", sorted(FAMILY))
def test_fused_update_is_bitwise_the_single_updates(name, preloaded):
    """Three steps of the fused op over three weights == three steps of the single op per weight,
    bit for bit, for weights and every state (float16 weights for the mp forms)."""
    single, states = FAMILY[name]
    dtype = np.float16 if "mp" in name else np.float32
    groups = _arrays(0, dtype, states)
    fused = [[mx.nd.array(a, dtype=a.dtype) for a in grp] for grp in groups]
    alone = [[mx.nd.array(a, dtype=a.dtype) for a in grp] for grp in groups]
    kw = _kwargs(name)
    for _ in range(3):
        flat = [a for grp in fused for a in grp]
        weights = [grp[0] for grp in fused]
        if preloaded:
            res = getattr(mx.nd, "preloaded_" + name)(*flat, mx.nd.array(LRS), mx.nd.array(WDS),
                                                      out=weights, num_weights=3, **kw)
        else:
            res = getattr(mx.nd, name)(*flat, out=weights, num_weights=3, lrs=LRS, wds=WDS, **kw)
        assert res is weights
        for grp, lr, wd in zip(alone, LRS, WDS):
            # preloaded rates travel as float32, so the single op gets the float32-rounded value
            lr, wd = (float(np.float32(lr)), float(np.float32(wd))) if preloaded else (lr, wd)
            getattr(mx.nd, single)(*grp, out=grp[0], lr=lr, wd=wd, **kw)
    for f, a in zip(fused, alone):
        for x, y in zip(f, a):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())


def test_multi_sgd_update_formula_and_new_outputs():
    """Without out=, the fused op returns new weights ``(1 - lr*wd)*w - lr*clip(rescale*g)`` and
    leaves the inputs alone."""
    (w0, g0), (w1, g1), _ = _arrays(1, np.float32, ())
    res = mx.nd.multi_sgd_update(mx.nd.array(w0), mx.nd.array(g0), mx.nd.array(w1), mx.nd.array(g1),
                                 num_weights=2, lrs=(0.1, 0.2), wds=(0.01, 0.0), clip_gradient=0.5)
    assert isinstance(res, list) and len(res) == 2
    for r, w, g, lr, wd in zip(res, (w0, w1), (g0, g1), (0.1, 0.2), (0.01, 0.0)):
        np.testing.assert_allclose(r.asnumpy(), (1 - lr * wd) * w - lr * np.clip(g, -0.5, 0.5), rtol=1e-6)


def test_multi_mp_sgd_mom_update_keeps_float32_master_and_momentum():
    """The float16 weight receives the float32 master copy rounded; states stay float32."""
    (w, g, m, w32), = _arrays(2, np.float16, ("mom", "weight32"))[:1]
    arrs = [mx.nd.array(a, dtype=a.dtype) for a in (w, g, m, w32)]
    mx.nd.multi_mp_sgd_mom_update(*arrs, out=[arrs[0]], num_weights=1, lrs=(0.1,), wds=(0.0,), momentum=0.5)
    mom = 0.5 * m - 0.1 * g.astype(np.float32)
    np.testing.assert_allclose(arrs[2].asnumpy(), mom, rtol=1e-6)
    np.testing.assert_allclose(arrs[3].asnumpy(), w32 + mom, rtol=1e-6)
    assert arrs[0].dtype == np.float16
    np.testing.assert_array_equal(arrs[0].asnumpy(), (w32 + mom).astype(np.float16))


def test_symbol_layout_shapes_and_types():
    """Interleaved inputs: momenta and master copies are auxiliary states; shapes and dtypes
    are inferred per weight, the preloaded rates are float32 vectors of num_weights."""
    v = {n: mx.sym.var(n) for n in ("w0", "g0", "m0", "x0", "w1", "g1", "m1", "x1", "lrs", "wds")}
    s = mx.sym.multi_sgd_mom_update(v["w0"], v["g0"], v["m0"], v["w1"], v["g1"], v["m1"],
                                    num_weights=2, lrs=(0.1, 0.1), wds=(0, 0))
    assert s.list_arguments() == ["w0", "g0", "w1", "g1"]
    assert s.list_auxiliary_states() == ["m0", "m1"]
    assert len(s.list_outputs()) == 2
    args, outs, aux = s.infer_shape(w0=(2, 3), w1=(4,))
    assert args == [(2, 3), (2, 3), (4,), (4,)] and outs == [(2, 3), (4,)] and aux == [(2, 3), (4,)]
    p = mx.sym.preloaded_multi_mp_sgd_mom_update(*[v[k] for k in ("w0", "g0", "m0", "x0", "w1", "g1", "m1",
                                                                  "x1", "lrs", "wds")], num_weights=2)
    assert p.list_arguments() == ["w0", "g0", "w1", "g1", "lrs", "wds"]
    args, outs, aux = p.infer_type(w0="float16", w1="float16")
    assert [a.__name__ for a in args] == ["float16"] * 4 + ["float32"] * 2
    assert [a.__name__ for a in outs] == ["float16"] * 2 and all(a is np.float32 for a in aux)
    assert p.infer_shape(w0=(2, 3), w1=(4,))[0][-2:] == [(2,), (2,)]


def test_symbol_bind_forward_updates_weights():
    """Bound in an executor, the op's outputs are the updated weights."""
    w, g = mx.sym.var("w"), mx.sym.var("g")
    s = mx.sym.multi_sgd_update(w, g, num_weights=1, lrs=(0.5,), wds=(0.0,))
    ex = s.bind(mx.cpu(), {"w": mx.nd.ones((2, 2)), "g": mx.nd.full((2, 2), 2.0)})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), np.zeros((2, 2)))


def test_errors_name_the_operator_and_argument():
    """Wrong rate counts, mismatched shapes in one weight's group, non-float32 master copies."""
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((3,))
    with pytest.raises(MXNetError, match="multi_sgd_update.*'lrs' has 1 values, but num_weights is 2"):
        mx.nd.multi_sgd_update(a, a, a, a, num_weights=2, lrs=(0.1,), wds=(0, 0))
    with pytest.raises(MXNetError, match="multi_sgd_update: weight 0's inputs must share one shape"):
        mx.nd.multi_sgd_update(a, b, num_weights=1, lrs=(0.1,), wds=(0,))
    with pytest.raises(MXNetError, match="multi_mp_sgd_update: input 2 must be float32"):
        h = mx.nd.ones((2, 3), dtype="float16")
        mx.nd.multi_mp_sgd_update(h, h, h, num_weights=1, lrs=(0.1,), wds=(0,))
    with pytest.raises(MXNetError, match="preloaded_multi_sgd_update: input 'lrs' has shape"):
        mx.nd.preloaded_multi_sgd_update(a, a, mx.nd.ones(3), mx.nd.ones(1), num_weights=1)
    with pytest.raises(MXNetError, match="num_weights must be >= 1"):
        mx.nd.multi_sgd_update(a, a, num_weights=0, lrs=(), wds=())
