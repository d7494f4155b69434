"""IdentityAttachKLSparseReg: identity forward, KL penalty gradient and moving average in backward."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


def test_backward_updates_moving_average_and_adds_penalty(rng):
    """Each backward: avg <- m avg + (1 - m) mean(x); dx = ograd + p (-rho/avg + (1-rho)/(1-avg))."""
    x = rng.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
    s = mx.sym.IdentityAttachKLSparseReg(mx.sym.var("data"), penalty=0.01, momentum=0.8,
                                         sparseness_target=0.2, name="kl")
    assert s.list_auxiliary_states() == ["kl_moving_avg"]
    ex = s.simple_bind(mx.cpu(), data=(4, 3))
    ex.aux_dict["kl_moving_avg"][:] = 0.3
    avg = np.full(3, 0.3)
    for _ in range(2):
        ex.forward(is_train=True, data=x)
        np.testing.assert_array_equal(ex.outputs[0].asnumpy(), x)
        og = rng.standard_normal((4, 3)).astype(np.float32)
        ex.backward(mx.nd.array(og))
        avg = 0.8 * avg + 0.2 * x.mean(0)
        np.testing.assert_allclose(ex.aux_dict["kl_moving_avg"].asnumpy(), avg, rtol=1e-6)
        want = og + 0.01 * (-0.2 / avg + 0.8 / (1 - avg))
        np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), want, rtol=1e-5)


def test_nd_and_shapes():
    """Imperative form is the identity; the moving average has one entry per unit."""
    x = mx.nd.array([[0.1, 0.5]])
    np.testing.assert_array_equal(mx.nd.IdentityAttachKLSparseReg(x, mx.nd.array([0.5, 0.5])).asnumpy(),
                                  x.asnumpy())
    s = mx.sym.IdentityAttachKLSparseReg(mx.sym.var("d"))
    assert s.infer_shape(d=(5, 7)) == ([(5, 7)], [(5, 7)], [(7,)])
    with pytest.raises(MXNetError, match="moving_avg"):
        s.infer_shape(d=(5, 7), identityattachklsparsereg1_moving_avg=(6,))
