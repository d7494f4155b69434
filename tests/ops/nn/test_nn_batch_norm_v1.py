"""BatchNorm_v1: BatchNorm on axis 1 whose hidden var output is the variance; values from MXNet 1.9.1."""
import numpy as np
from nn_check import check_gradient, forward

import mxref as mx


def test_matches_mxnet_training_step():
    """Outputs, gradients and moving statistics of one training step, as MXNet 1.9.1 printed them
    for this data (np.random.seed(0))."""
    rs = np.random.RandomState(0)
    x, og = rs.rand(2, 3, 2, 2), rs.rand(2, 3, 2, 2)
    s = mx.sym.BatchNorm_v1(mx.sym.var("x"), mx.sym.var("g"), mx.sym.var("b"), fix_gamma=False,
                            output_mean_var=True, name="bn")
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    e = s.simple_bind(mx.cpu(), x=x.shape)
    e.arg_dict["x"][:] = x
    e.arg_dict["g"][:] = np.array([1.0, 2, 3])
    e.arg_dict["b"][:] = np.array([0.1, 0.2, 0.3])
    e.aux_dict["bn_moving_var"][:] = 1
    out = e.forward(is_train=True)
    e.backward([mx.nd.array(og), mx.nd.zeros(3), mx.nd.zeros(3)])
    np.testing.assert_allclose(out[1].asnumpy(), [0.507932, 0.6124895, 0.7109387], rtol=1e-5)
    np.testing.assert_allclose(out[2].asnumpy(), [0.07512444, 0.07979631, 0.04466227], rtol=1e-5)
    np.testing.assert_allclose(e.grad_dict["g"].asnumpy(), [-0.793025, 0.3505041, 0.05772215],
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(e.aux_dict["bn_moving_var"].asnumpy(), [0.9075124, 0.9079796, 0.9044662],
                               rtol=1e-5)


def test_gradient_and_inference(rng):
    x = rng.standard_normal((3, 2, 4))
    gamma, beta = np.array([0.5, 2.0]), np.array([0.1, -0.3])
    mean, var = np.array([0.2, -0.1]), np.array([1.5, 0.7])
    check_gradient("BatchNorm_v1", [x, gamma, beta, mean, var], wrt=[0, 1, 2], fix_gamma=False)
    (y, *_) = forward("BatchNorm_v1", [x, gamma, beta, mean, var], is_train=False, fix_gamma=False)
    want = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-3) * gamma[:, None] + beta[:, None]
    np.testing.assert_allclose(y, want, rtol=1e-10)
