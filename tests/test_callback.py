"""mx.callback: checkpoint periods and numbering, Speedometer, ProgressBar and metric log lines."""
import logging
import os
import types

import mxref as mx
from mxref import callback
from mxref.model import BatchEndParam


def tiny():
    data = mx.sym.Variable("data")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), name="softmax")


def metric_with(correct, total):
    m = mx.metric.Accuracy()
    m.update([mx.nd.array([1] * correct + [0] * (total - correct))], [mx.nd.array([1] * total)])
    return m


def test_do_checkpoint_numbers_files_epoch_plus_one_every_period(tmp_path):
    """do_checkpoint(prefix, 2) saves after epochs 1 and 3 as files 0002 and 0004."""
    prefix = str(tmp_path / "m")
    cb = callback.do_checkpoint(prefix, period=2)
    arg = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    for epoch in range(4):
        cb(epoch, tiny(), arg, {})
    assert sorted(os.listdir(tmp_path)) == ["m-0002.params", "m-0004.params", "m-symbol.json"]
    _, loaded, _ = mx.model.load_checkpoint(prefix, 4)
    assert loaded["fc_weight"].asnumpy().sum() == 6


def test_module_checkpoint_calls_the_module(tmp_path):
    """module_checkpoint saves through Module.save_checkpoint, optionally with optimizer states."""
    calls = []

    class FakeModule:
        def save_checkpoint(self, prefix, epoch, save_optimizer_states):
            calls.append((prefix, epoch, save_optimizer_states))

    cb = callback.module_checkpoint(FakeModule(), "p", period=3, save_optimizer_states=True)
    for epoch in range(6):
        cb(epoch)
    assert calls == [("p", 3, True), ("p", 6, True)]


def test_speedometer_logs_speed_and_resets_metric(caplog, monkeypatch):
    """Every `frequent` batches: samples/s over those batches and the metric since the last line."""
    clock = iter([100.0, 102.0, 102.5])
    monkeypatch.setattr(callback, "time", types.SimpleNamespace(time=lambda: next(clock)))
    metric = metric_with(3, 4)
    speedo = callback.Speedometer(batch_size=10, frequent=5)
    with caplog.at_level(logging.INFO):
        speedo(BatchEndParam(0, 0, metric, {}))        # starts the clock at t=100
        speedo(BatchEndParam(0, 5, metric, {}))        # 5 batches * 10 samples in 2 s
    assert speedo.speed == 25.0
    assert "Epoch[0] Batch [0-5]\tSpeed: 25.00 samples/sec\taccuracy=0.750000" in caplog.text
    assert metric.get()[1] != metric.get()[1]            # local statistics reset (NaN)
    assert metric.get_global()[1] == 0.75


def test_progress_bar_and_metric_logs(caplog):
    """ProgressBar draws '[===---] 50%'; validation and train metric lines use MXNet's wording."""
    with caplog.at_level(logging.INFO):
        callback.ProgressBar(total=4, length=6)(BatchEndParam(0, 2, None, {}))
        callback.LogValidationMetricsCallback()(BatchEndParam(3, 0, metric_with(1, 2), {}))
        callback.log_train_metric(period=2)(BatchEndParam(1, 4, metric_with(2, 2), {}))
    assert "[===---] 50%" in caplog.text
    assert "Epoch[3] Validation-accuracy=0.500000" in caplog.text
    assert "Iter[1] Batch[4] Train-accuracy=1.000000" in caplog.text
