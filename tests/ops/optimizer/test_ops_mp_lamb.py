"""``mp_lamb_update_phase1/2``: LAMB's phases on a float32 master copy, against the float32 phases."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


@pytest.mark.parametrize("kw", [{}, dict(rescale_grad=0.5, clip_gradient=0.2, bias_correction=False)])
def test_mp_phases_equal_the_float32_phases_on_the_master_copy(kw):
    """Two steps: direction, master copy, mean and var as lamb_update_phase1/2 on float32 weights;
    the float16 weight is the master copy rounded."""
    rng = np.random.default_rng(0)
    w0 = rng.uniform(-1, 1, (3, 4)).astype(np.float16)
    w16, w32 = mx.nd.array(w0, dtype="float16"), mx.nd.array(w0.astype(np.float32))
    ref = mx.nd.array(w0.astype(np.float32))
    m, v, rm, rv = (mx.nd.zeros((3, 4)) for _ in range(4))
    for t in (1, 2):
        g = rng.uniform(-1, 1, (3, 4)).astype(np.float16)
        d = mx.nd.mp_lamb_update_phase1(w16, mx.nd.array(g, dtype="float16"), m, v, w32, t=t, wd=0.01, **kw)
        assert d.dtype == np.float32
        out = mx.nd.mp_lamb_update_phase2(w16, d, mx.nd.norm(w32), mx.nd.norm(d), w32, lr=0.1, out=w16,
                                          lower_bound=0.1)
        rd = mx.nd.lamb_update_phase1(ref, mx.nd.array(g.astype(np.float32)), rm, rv, t=t, wd=0.01, **kw)
        mx.nd.lamb_update_phase2(ref, rd, mx.nd.norm(ref), mx.nd.norm(rd), lr=0.1, out=ref, lower_bound=0.1)
        np.testing.assert_array_equal(d.asnumpy(), rd.asnumpy())
    assert out is w16 and w16.dtype == np.float16
    for a, b in ((w32, ref), (m, rm), (v, rv)):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    np.testing.assert_array_equal(w16.asnumpy(), ref.asnumpy().astype(np.float16))


def test_symbols_and_errors():
    """Only mean and var are mutated by phase 1, only weight32 by phase 2 (MXNet's lists)."""
    v = [mx.sym.var(n) for n in ("w", "g", "m", "v", "x")]
    s1 = mx.sym.mp_lamb_update_phase1(*v, t=1, wd=0.0)
    assert s1.list_arguments() == ["w", "g", "x"] and s1.list_auxiliary_states() == ["m", "v"]
    s2 = mx.sym.mp_lamb_update_phase2(*[mx.sym.var(n) for n in ("w", "d", "a", "b", "x")], lr=0.1)
    assert s2.list_arguments() == ["w", "d", "a", "b"] and s2.list_auxiliary_states() == ["x"]
    assert s2.infer_type(w="float16")[1] == [np.float16]
    h = mx.nd.ones((2,), dtype="float16")
    with pytest.raises(MXNetError, match="mp_lamb_update_phase1: input 2 must be float32"):
        mx.nd.mp_lamb_update_phase1(h, h, h, mx.nd.ones(2), mx.nd.ones(2), t=1, wd=0.0)
    with pytest.raises(MXNetError, match="mp_lamb_update_phase2: input 2 has shape"):
        mx.nd.mp_lamb_update_phase2(h, mx.nd.ones(2), mx.nd.ones(2), mx.nd.ones(1), mx.nd.ones(2), lr=0.1)
