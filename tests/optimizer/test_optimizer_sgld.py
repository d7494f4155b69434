"""``SGLD``: half a gradient step plus N(0, sqrt(lr)) noise, reproducible under ``mx.random.seed``."""
import math

import numpy as np
import pytest

import mxref as mx
from mxref import optimizer as opt


@pytest.mark.parametrize("kw", [dict(learning_rate=0.01), dict(learning_rate=0.04, wd=0.1, rescale_grad=0.5,
                                                                clip_gradient=0.2)])
def test_sgld_step_is_the_gradient_step_plus_the_seeded_noise(kw):
    """Three steps: each is w - lr/2*(clip(rescale*g) + wd*w) + the normal draw a reseeded
    generator gives (the optimizer draws exactly one normal per update)."""
    rng = np.random.default_rng(0)
    o = opt.SGLD(**kw)
    w0 = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    w, ref = mx.nd.array(w0), w0.astype(np.float64)
    lr, wd, c = kw["learning_rate"], kw.get("wd", 0.0), kw.get("clip_gradient")
    for step in range(3):
        g = rng.uniform(-1, 1, w0.shape).astype(np.float32)
        mx.random.seed(100 + step)
        o.update(0, w, mx.nd.array(g), None)
        mx.random.seed(100 + step)
        noise = mx.nd.random.normal(0, math.sqrt(lr), shape=w0.shape).asnumpy()
        gc = kw.get("rescale_grad", 1.0) * g
        gc = np.clip(gc, -c, c) if c is not None else gc
        ref = ref - lr / 2 * (gc + wd * ref) + noise
        np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_sgld_noise_has_variance_lr():
    """With a zero gradient the weights spread as N(0, lr): mean ~ 0, std ~ sqrt(lr)."""
    mx.random.seed(3)
    w = mx.nd.zeros((200, 200))
    opt.SGLD(learning_rate=0.04).update(0, w, mx.nd.zeros((200, 200)), None)
    x = w.asnumpy()
    assert abs(x.mean()) < 0.01 and abs(x.std() - 0.2) < 0.005
    assert opt.SGLD().create_state(0, w) is None
