"""``ftml_update`` against numpy written from its formula, over several steps, with wd, rescale and clip."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


def _np_ftml(w, g, d, v, z, t, lr, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
             clip_grad=-1.0):
    g = rescale_grad * g + wd * w
    if clip_grad >= 0:
        g = np.clip(g, -clip_grad, clip_grad)
    v = beta2 * v + (1 - beta2) * g * g
    d_t = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * w
    return -z / d_t, d_t, v, z


@pytest.mark.parametrize("kw", [{}, {"wd": 0.01, "rescale_grad": 0.5}, {"clip_grad": 0.3, "beta1": 0.5},
                                {"wd": 0.1, "clip_grad": 0.2, "epsilon": 1e-6}])
def test_ftml_update_matches_numpy_over_steps(kw):
    """Four in-place steps: weight and the three states d, v, z follow the formula (float64)."""
    rng = np.random.default_rng(4)
    w = rng.uniform(-1, 1, (3, 5))
    ref = [w.copy(), np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)]
    arrs = [mx.nd.array(a, dtype="float64") for a in ref]
    for t in range(1, 5):
        g = rng.uniform(-1, 1, w.shape)
        mx.nd.ftml_update(arrs[0], mx.nd.array(g, dtype="float64"), *arrs[1:], out=arrs[0], lr=0.05, t=t,
                          **kw)
        ref = list(_np_ftml(*ref[:1], g, *ref[1:], t=t, lr=0.05, **kw))
        for a, b in zip(arrs, ref):
            np.testing.assert_allclose(a.asnumpy(), b, rtol=1e-12, atol=1e-14)


def test_ftml_update_float32_and_errors():
    """float32 stays float32; the state shapes must match the weight; ``t`` is required."""
    w = mx.nd.ones((2, 2))
    d, v, z = (mx.nd.zeros((2, 2)) for _ in range(3))
    out = mx.nd.ftml_update(w, mx.nd.ones((2, 2)), d, v, z, lr=0.1, t=1)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), _np_ftml(np.ones((2, 2)), np.ones((2, 2)), 0, 0, 0, 1, 0.1)[0],
                               rtol=1e-6)
    with pytest.raises(MXNetError, match="ftml_update.*one shape"):
        mx.nd.ftml_update(w, mx.nd.ones((3,)), d, v, z, lr=0.1, t=1)
    with pytest.raises(MXNetError, match="ftml_update: required argument 't'"):
        mx.nd.ftml_update(w, w, d, v, z, lr=0.1)
    s = mx.sym.ftml_update(mx.sym.var("w"), mx.sym.var("g"), mx.sym.var("d"), mx.sym.var("v"),
                           mx.sym.var("z"), lr=0.1, t=1)
    assert s.list_arguments() == ["w", "g"] and s.list_auxiliary_states() == ["d", "v", "z"]
