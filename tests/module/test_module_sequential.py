"""SequentialModule, PythonModule and PythonLossModule (mx.mod)."""
import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError


def _two_modules():
    d1 = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(d1, num_hidden=4, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    m1 = mx.mod.Module(act, data_names=["data"], label_names=None)
    d2 = mx.sym.Variable("data2")
    fc2 = mx.sym.FullyConnected(d2, num_hidden=3, name="fc2")
    out = mx.sym.SoftmaxOutput(fc2, name="softmax")
    m2 = mx.mod.Module(out, data_names=["data2"], label_names=["softmax_label"])
    return m1, m2, out


def _batch(rng, n=5):
    x = mx.nd.array(rng.randn(n, 6))
    y = mx.nd.array(rng.randint(0, 3, n))
    return mx.io.DataBatch([x], [y])


def test_sequential_matches_one_module():
    """Outputs and first-layer gradients equal those of the same net as one symbol."""
    rng = np.random.RandomState(0)
    m1, m2, _ = _two_modules()
    seq = mx.mod.SequentialModule().add(m1).add(m2, take_labels=True, auto_wiring=True)
    seq.bind([("data", (5, 6))], [("softmax_label", (5,))], inputs_need_grad=True)
    seq.init_params(mx.init.Uniform(0.5))
    batch = _batch(rng)
    seq.forward(batch, is_train=True)
    seq.backward()
    arg, _ = seq.get_params()
    assert sorted(arg) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]

    d = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(d, num_hidden=4, name="fc1"), act_type="relu")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")
    one = mx.mod.Module(net)
    one.bind([("data", (5, 6))], [("softmax_label", (5,))], inputs_need_grad=True)
    one.set_params(arg, {})
    one.forward(batch, is_train=True)
    one.backward()
    np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), one.get_outputs()[0].asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(seq.get_input_grads()[0].asnumpy(), one.get_input_grads()[0].asnumpy(),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(m1._exec_group.grad_arrays[0][0].asnumpy(),
                               one._exec_group.grad_arrays[one._exec_group.param_names.index("fc1_weight")][0].asnumpy(),
                               rtol=1e-4, atol=1e-6)


def test_sequential_fit_learns():
    """fit() through the chain lowers the training error on a separable toy set."""
    rng = np.random.RandomState(1)
    x = rng.randn(60, 6).astype("float32")
    y = (x[:, 0] > 0).astype("float32") + (x[:, 1] > 1)
    it = mx.io.NDArrayIter(x, y, batch_size=10, label_name="softmax_label")
    m1, m2, _ = _two_modules()
    seq = mx.mod.SequentialModule().add(m1).add(m2, take_labels=True, auto_wiring=True)
    seq.fit(it, num_epoch=15, optimizer_params={"learning_rate": 0.5}, initializer=mx.init.Xavier())
    assert seq.score(it, "acc")[0][1] > 0.8
    assert seq.label_shapes[0][0] == "softmax_label"
    assert [d[0] for d in seq.output_shapes] == ["softmax_output"]


def test_sequential_errors():
    """Unknown meta keys, empty chains and duplicated parameter names are refused."""
    with pytest.raises(MXNetError, match="unknown meta"):
        mx.mod.SequentialModule().add(None, take_label=True)
    with pytest.raises(MXNetError, match="empty"):
        mx.mod.SequentialModule().bind([("data", (1, 2))])
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(sym, label_names=None))
    seq.add(mx.mod.Module(sym, label_names=None), auto_wiring=True)
    seq.bind([("data", (2, 6))], for_training=False)
    with pytest.raises(MXNetError, match="duplicated parameter name 'fc_weight'"):
        seq.init_params()


def test_python_loss_module_in_chain():
    """A PythonLossModule ends the chain: its grad_func's result flows back as out_grads."""
    rng = np.random.RandomState(2)
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    mod = mx.mod.Module(fc, label_names=None)

    def grad(scores, labels):          # softmax cross-entropy, written by hand
        s = scores.asnumpy()
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(p)), labels.asnumpy().astype(int)] -= 1
        return p

    loss = mx.mod.PythonLossModule(grad_func=grad)
    assert loss.output_names == ["pyloss_output"]
    seq = mx.mod.SequentialModule().add(mod).add(loss, take_labels=True, auto_wiring=True)
    seq.bind([("data", (4, 6))], [("softmax_label", (4,))])
    seq.init_params(mx.init.Uniform(0.3))
    batch = _batch(rng, 4)
    seq.forward(batch, is_train=True)
    seq.backward()
    assert loss.output_shapes == [("pyloss_output", (4, 3))]
    scores = seq.get_outputs()[0].asnumpy()
    g = grad(mx.nd.array(scores), batch.label[0])
    w_grad = mod._exec_group.grad_arrays[mod._exec_group.param_names.index("fc_weight")][0]
    np.testing.assert_allclose(w_grad.asnumpy(), g.T @ batch.data[0].asnumpy(), rtol=1e-4, atol=1e-6)
    metric = mx.metric.Accuracy()
    seq.update_metric(metric, batch.label)
    assert metric.num_inst == 4


def test_python_module_checks():
    """PythonModule checks names at bind; the base loss module has no gradient of its own."""
    loss = mx.mod.PythonLossModule()
    with pytest.raises(MXNetError, match="expects"):
        loss.bind([("x", (2, 3))])
    loss.bind([("data", (2, 3))], [("softmax_label", (2,))])
    assert loss.get_params() == ({}, {})
    loss.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))]))
    with pytest.raises(NotImplementedError):
        loss.backward()
    with pytest.raises(MXNetError, match="out_grads"):
        loss.backward(out_grads=[mx.nd.ones((2, 3))])
    with pytest.raises(MXNetError, match="exactly one"):
        mx.mod.PythonLossModule(data_names=("a", "b"))
