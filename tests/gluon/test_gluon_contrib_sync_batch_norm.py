"""gluon.contrib.nn.SyncBatchNorm: on one process it equals BatchNorm, forward and backward."""
import numpy as np

import mxref as mx


def test_sync_batch_norm_equals_batch_norm():
    """Same outputs, input gradients, running statistics and parameter names as BatchNorm."""
    x = mx.nd.array(np.random.RandomState(0).randn(4, 3, 5, 5))
    out, grads, nets = [], [], []
    for net in (mx.gluon.contrib.nn.SyncBatchNorm(in_channels=3, num_devices=2),
                mx.gluon.nn.BatchNorm(in_channels=3)):
        net.initialize()
        xi = x.copy()
        xi.attach_grad()
        with mx.autograd.record():
            y = net(xi)
            loss = (y * y).sum()
        loss.backward()
        out.append(y.asnumpy())
        grads.append(xi.grad.asnumpy())
        nets.append(net)
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nets[0].running_mean.data().asnumpy(),
                               nets[1].running_mean.data().asnumpy(), rtol=1e-6)
    assert nets[0].num_devices == 2
    names = sorted(k.split("_", 1)[1] for k in nets[0].collect_params())
    assert names == ["beta", "gamma", "running_mean", "running_var"]
    assert nets[0].prefix.startswith("syncbatchnorm")
