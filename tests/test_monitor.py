"""mx.mon.Monitor: node outputs, gradients and parameters of bound executors, as MXNet reports them."""
import logging

import numpy as np

import mxref as mx


def _net():
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(x, num_hidden=2, name="fc_0")
    x = mx.sym.Activation(x, act_type="sigmoid", name="act_0")
    x = mx.sym.FullyConnected(x, num_hidden=2, name="fc_1")
    x = mx.sym.Activation(x, act_type="sigmoid", name="act_1")
    return mx.sym.LinearRegressionOutput(x, name="softmax", grad_scale=2)


def _module(mon):
    it = mx.io.NDArrayIter(mx.nd.array([[0.05, 0.10]]), mx.nd.array([[0.01, 0.99]]), batch_size=1)
    mod = mx.mod.Module(_net(), context=[mx.cpu()])
    mod.bind(it.provide_data, label_shapes=it.provide_label, for_training=True)
    mod.install_monitor(mon)
    mod.init_params(arg_params={"fc_0_weight": mx.nd.array([[.15, .20], [.25, .30]]),
                                "fc_0_bias": mx.nd.array([.35, .35]),
                                "fc_1_weight": mx.nd.array([[.40, .45], [.50, .55]]),
                                "fc_1_bias": mx.nd.array([.60, .60])})
    return mod, next(iter(it))


def _mean_abs(x):
    return mx.nd.sum(mx.nd.abs(x)) / x.size


def test_forward_backward_names_as_mxnet():
    """Outputs, backward outputs (both of a loss layer's) and arguments, sorted by name."""
    mon = mx.mon.Monitor(1, stat_func=_mean_abs, pattern=".*", sort=True)
    mod, batch = _module(mon)
    mon.tic()
    mod.forward_backward(batch)
    res = mon.toc()
    names = [name for _, name, _ in res]
    assert names == sorted(names) and len(res) == 21
    assert "softmax_backward_output0" in names and "softmax_backward_output1" in names
    assert {"data", "softmax_label", "fc_0_weight", "fc_1_bias", "act_0_output"} <= set(names)
    stats = {name: float(text) for _, name, text in res}
    h = 1 / (1 + np.exp(-(np.array([[.15, .20], [.25, .30]]) @ [0.05, 0.10] + .35)))
    np.testing.assert_allclose(stats["act_0_output"], np.abs(h).mean(), rtol=1e-6)
    assert stats["data"] == np.float32(0.075)
    assert all(step == 1 for step, _, _ in res)


def test_interval_pattern_and_default_stat():
    """Only every ``interval``-th batch is collected; ``pattern`` filters with re.match."""
    mon = mx.mon.Monitor(2, pattern="fc_0_weight")
    mod, batch = _module(mon)
    got = []
    for _ in range(4):
        mon.tic()
        mod.forward_backward(batch)
        got.append(mon.toc())
    assert [len(r) for r in got] == [1, 0, 1, 0]
    w = np.array([[.15, .20], [.25, .30]], np.float32)
    assert float(got[0][0][2]) == np.float32(np.linalg.norm(w) / 2)


def test_toc_print_logs(caplog):
    mon = mx.mon.Monitor(1, pattern="act_1_output")
    mod, batch = _module(mon)
    mon.tic()
    mod.forward(batch, is_train=False)
    with caplog.at_level(logging.INFO):
        mon.toc_print()
    assert "act_1_output" in caplog.text and "Batch:       1" in caplog.text


def test_list_of_stats():
    mon = mx.mon.Monitor(1, stat_func=lambda x: [mx.nd.max(x), mx.nd.min(x)], pattern="data")
    mod, batch = _module(mon)
    mon.tic()
    mod.forward(batch, is_train=False)
    (_, name, text), = mon.toc()
    assert name == "data" and text.split("\t")[:2] == ["0.1", "0.05"]
