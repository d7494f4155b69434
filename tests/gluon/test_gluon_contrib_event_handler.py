"""gluon.contrib.estimator event handlers: stopping, metrics, validation periods, logging lines and
progress bars, checkpoints (rotation, best, resume) and early stopping."""
import importlib.util
import io
import logging
import os
import re
import types
import warnings

import numpy as np
import pytest

import mxref as mx
from mxref import gluon
from mxref.gluon import nn
from mxref.gluon.contrib.estimator import Estimator, event_handler, logging_handler, progress
from mxref.gluon.contrib.estimator.event_handler import (
    CheckpointHandler,
    EarlyStoppingHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    ValidationHandler,
)
from mxref.gluon.contrib.estimator.utils import _monitor_op


def loader(n=32, batch_size=8, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(n, 4)).astype(np.float32)
    y = (x[:, 0] > x[:, 1]).astype(np.float32)
    return gluon.data.DataLoader(gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y)),
                                 batch_size=batch_size)


def estimator(hybrid=False, lr=0.3, seed=0):
    mx.random.seed(seed)
    net = nn.HybridSequential() if hybrid else nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(2, in_units=4))
    net.initialize(mx.init.Xavier())
    if hybrid:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer)
    est.logger.handlers.clear()
    return est


class Scripted(mx.metric.EvalMetric):
    """A metric whose value at each get() call is the next one of a script (for early stopping)."""

    def __init__(self, values, name="validation loss"):
        self.values = list(values)
        super().__init__(name)

    def update(self, labels, preds):
        pass

    def get(self):
        return self.name, self.values.pop(0)


def fake_estimator():
    log = logging.Logger("test")
    return types.SimpleNamespace(logger=log, max_epoch=None, max_batch=None)


# -- stopping, metrics, validation ------------------------------------------------------------------
def test_stopping_handler_counts_batches_and_epochs():
    est = fake_estimator()
    est.max_epoch, est.max_batch = 2, None
    stop = StoppingHandler()
    stop.train_begin(est)
    assert [stop.batch_end(est) for _ in range(3)] == [False] * 3
    assert stop.epoch_end(est) is False and stop.epoch_end(est) is True
    est.max_epoch, est.max_batch = None, 2
    stop = StoppingHandler()
    stop.train_begin(est)
    assert [stop.batch_end(est), stop.batch_end(est)] == [False, True]


def test_metric_handler_feeds_loss_metrics_the_loss():
    acc, mean_loss = mx.metric.Accuracy(), mx.metric.Loss()
    handler = MetricHandler([acc, mean_loss])
    assert handler.priority == -1000
    pred = [mx.nd.array([[0.9, 0.1], [0.2, 0.8]])]
    handler.batch_end(None, pred=pred, label=[mx.nd.array([0, 0])], loss=[mx.nd.array([1.0, 3.0])])
    assert acc.get()[1] == 0.5 and mean_loss.get()[1] == 2.0
    handler.epoch_begin(None)
    assert np.isnan(acc.get()[1]) and np.isnan(mean_loss.get()[1])


def test_validation_handler_periods():
    """eval_fn runs every batch_period batches and every epoch_period epochs, with the handlers."""
    calls = []
    marker = object()
    handler = ValidationHandler(val_data="val", eval_fn=lambda **kw: calls.append(kw), epoch_period=2,
                                batch_period=3, event_handlers=marker)
    est = types.SimpleNamespace(batch_axis=1)
    handler.train_begin(est)
    for _ in range(7):
        handler.batch_end(est)
    assert len(calls) == 2
    handler.epoch_end(est)
    handler.epoch_end(est)
    assert len(calls) == 3
    assert calls[0] == {"val_data": "val", "batch_axis": 1, "event_handlers": marker}


def test_gradient_update_handler_takes_the_summed_batch_size():
    steps = []
    est = types.SimpleNamespace(trainer=types.SimpleNamespace(step=steps.append))
    event_handler.GradientUpdateHandler().batch_end(est, loss=[mx.nd.ones((3,)), mx.nd.ones((5,))])
    event_handler.GradientUpdateHandler().batch_end(est, loss=mx.nd.ones((4,)))
    assert steps == [8, 4]


# -- logging and progress bars ----------------------------------------------------------------------
def test_logging_lines(capsys):
    """MXNet's lines: train begin, per-interval batch lines, epoch lines, the train-end summary."""
    est = estimator()
    est.logger.addHandler(logging.StreamHandler(buffer := io.StringIO()))
    log = LoggingHandler(log_interval=2, metrics=est.train_metrics)
    est.fit(loader(), epochs=2, event_handlers=[log])
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "Training begin: using optimizer SGD with current learning rate 0.3000 "
    assert lines[1] == "Train for 2 epochs."
    batch_re = (r"\[Epoch \d\]\[Batch \d\]\[Samples \d+\] time/interval: \d+\.\d{3}s "
                r"training accuracy: \d\.\d{4}, training softmaxcrossentropyloss: \d\.\d{4}")
    assert sum(bool(re.fullmatch(batch_re, line)) for line in lines) == 4     # batches 0, 2 of 2 epochs
    assert sum(line.startswith("[Epoch 1] Finished in") for line in lines) == 1
    assert re.fullmatch(r"Train finished using total \d+s with 2 epochs\. training accuracy: .*", lines[-1])
    assert log.current_epoch == 2 and log.batch_index == 0
    est.evaluate(loader(), event_handlers=[LoggingHandler(metrics=est.val_metrics)])
    assert "Validation Begin" in buffer.getvalue()
    with pytest.raises(ValueError, match="log_interval"):
        LoggingHandler(log_interval="batch")


@pytest.mark.parametrize("use_tqdm", [False, pytest.param(True, marks=pytest.mark.skipif(
    importlib.util.find_spec("tqdm") is None, reason="tqdm is not installed"))])
def test_progress_bar_over_each_epoch(capsys, use_tqdm, monkeypatch):
    """progress_bar=True draws one bar per training epoch on stderr that reaches the epoch's
    batch count (a batches= limit shortens the last one); with tqdm or the text bar."""
    bars = []

    def spy(total, desc="", file=None):
        bars.append(progress.progress_bar(total, desc, file, use_tqdm=use_tqdm))
        return bars[-1]

    monkeypatch.setattr(logging_handler, "progress_bar", spy)
    est = estimator()
    est.fit(loader(), batches=6, event_handlers=[LoggingHandler(metrics=est.train_metrics,
                                                                progress_bar=True)])
    assert [(b.total, b.n) for b in bars] == [(4, 4), (2, 2)]
    err = capsys.readouterr().err
    assert "[Epoch 0]" in err and "[Epoch 1]" in err and "training accuracy" in err


def test_text_progress_bar_lines():
    """Not a terminal: a line at each tenth of the way and the last one at close; unknown total."""
    out = io.StringIO()
    bar = progress.TextProgressBar(20, desc="[Epoch 3]", file=out)
    for i in range(20):
        bar.set_postfix_str(f"loss: {i}")
        bar.update(1)
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 10
    assert re.fullmatch(r"\[Epoch 3\] 20/20 \[#{24}\] 100% [\d.]+ batch/s loss: 19", lines[-1])
    assert lines[0].startswith("[Epoch 3]  2/20 [##....")
    out = io.StringIO()
    bar = progress.TextProgressBar(None, file=out)
    bar.update(5)
    bar.close()
    assert re.fullmatch(r" 5 [\d.]+ batch/s", out.getvalue().splitlines()[-1])
    assert isinstance(progress.progress_bar(3, use_tqdm=False, file=out), progress.TextProgressBar)


# -- checkpoints --------------------------------------------------------------------------------------
def test_checkpoint_files_rotation_and_symbol(tmp_path):
    """batch_period=2, max_checkpoints=2 over 10 batches keeps the last two; the hybridized graph
    is saved once; only exact names are removed (epoch0batch1 must not take epoch0batch10 along)."""
    (tmp_path / "m-epoch0batch10.params").write_bytes(b"keep")
    est = estimator(hybrid=True)
    ckpt = CheckpointHandler(str(tmp_path), model_prefix="m", epoch_period=None, batch_period=2,
                             max_checkpoints=2)
    est.fit(loader(), batches=10, event_handlers=[ckpt])
    files = sorted(os.listdir(tmp_path))
    assert files == ["m-epoch0batch10.params", "m-epoch1batch7.params", "m-epoch1batch7.states",
                     "m-epoch2batch9.params", "m-epoch2batch9.states", "m-symbol.json"]
    assert ckpt.current_batch == 10 and ckpt.current_epoch == 3
    sym = mx.sym.load(str(tmp_path / "m-symbol.json"))
    assert any(name.endswith("dense0_weight") for name in sym.list_arguments())
    # the saved parameters are the trained ones
    net = nn.HybridSequential(prefix=est.net.prefix)
    with net.name_scope():
        net.add(nn.Dense(2, in_units=4))
    net.load_parameters(str(tmp_path / "m-epoch2batch9.params"))
    np.testing.assert_array_equal(net[0].weight.data().asnumpy(), est.net[0].weight.data().asnumpy())


def test_checkpoint_save_best_follows_the_monitor(tmp_path):
    """save_best on a loss in auto mode keeps the parameters of the lowest-loss epoch."""
    est = estimator()
    loss_metric = est.train_metrics[1]
    seen = []

    class Snapshot(event_handler.EpochEnd):
        priority = -500                      # after the metrics, before the checkpoint
        def epoch_end(self, estimator, *args, **kwargs):
            seen.append((loss_metric.get()[1], est.net[0].weight.data().asnumpy().copy()))

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ckpt = CheckpointHandler(str(tmp_path), monitor=loss_metric, save_best=True)
    assert "`less` operator" in str(w[-1].message) and ckpt.monitor_op is np.less
    est.fit(loader(), epochs=4, event_handlers=[Snapshot(), ckpt])
    best_value, best_weight = min(seen, key=lambda s: s[0])
    assert ckpt.best == best_value
    est.net.load_parameters(str(tmp_path / "model-best.params"))
    np.testing.assert_array_equal(est.net[0].weight.data().asnumpy(), best_weight)
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".params")]) == 5   # 4 epochs + best
    with pytest.raises(ValueError, match="monitor"):
        CheckpointHandler(str(tmp_path), save_best=True)


def test_checkpoint_resume(tmp_path):
    """Resuming loads the newest checkpoint, trains only the epochs left and numbers files on."""
    est = estimator()
    est.fit(loader(), epochs=2, event_handlers=[CheckpointHandler(str(tmp_path), max_checkpoints=1)])
    trained = est.net[0].weight.data().asnumpy().copy()
    est2 = estimator(seed=5)
    assert not np.array_equal(est2.net[0].weight.data().asnumpy(), trained)
    loaded = []

    class Peek(event_handler.TrainBegin):
        priority = 1                        # after the checkpoint handler's train_begin
        def train_begin(self, estimator, *args, **kwargs):
            loaded.append(estimator.net[0].weight.data().asnumpy().copy())

    ckpt = CheckpointHandler(str(tmp_path), max_checkpoints=1, resume_from_checkpoint=True)
    est2.fit(loader(), epochs=5, event_handlers=[ckpt, Peek()])
    np.testing.assert_array_equal(loaded[0], trained)
    assert (ckpt.trained_epoch, ckpt.trained_batch) == (1, 8) and est2.max_epoch == 3
    assert sorted(os.listdir(tmp_path)) == ["model-epoch4batch20.params", "model-epoch4batch20.states"]
    with pytest.raises(ValueError, match="maximum number of epoch"):
        estimator().fit(loader(), epochs=5, event_handlers=[
            CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])
    with pytest.raises(AssertionError, match="same type of period"):
        estimator().fit(loader(), batches=5, event_handlers=[
            CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])
    (tmp_path / "model-epochXbatch1.params").write_bytes(b"")
    with pytest.raises(ValueError, match="Error parsing checkpoint"):
        estimator().fit(loader(), epochs=9, event_handlers=[
            CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])


def test_checkpoint_resume_from_nothing_trains_from_scratch(tmp_path):
    est = estimator()
    est.logger.addHandler(logging.StreamHandler(buffer := io.StringIO()))
    ckpt = CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)
    est.fit(loader(), epochs=1, event_handlers=[ckpt])
    assert "No checkpoint found, training from scratch for 1 epochs" in buffer.getvalue()
    assert est.max_epoch == 1 and "model-epoch0batch4.params" in os.listdir(tmp_path)


# -- early stopping ------------------------------------------------------------------------------------
def test_early_stopping_patience_min_delta_baseline():
    est = fake_estimator()
    # min mode, patience 1: 3.0 improves on inf, 2.95 is within min_delta, 2.99 too -> stop at epoch 2
    stop = EarlyStoppingHandler(Scripted([3.0, 2.95, 2.99, 1.0]), min_delta=0.1, patience=2, mode="min")
    stop.train_begin(est)
    assert [stop.epoch_end(est) for _ in range(3)] == [False, False, True]
    assert stop.stopped_epoch == 2 and stop.best == 3.0
    # max mode with a baseline nothing beats: stops after `patience` epochs
    stop = EarlyStoppingHandler(Scripted([0.5, 0.6], name="accuracy"), patience=2, mode="max", baseline=0.9)
    stop.train_begin(est)
    assert [stop.epoch_end(est), stop.epoch_end(est)] == [False, True]
    # a metric never updated (NaN) warns and does not count as an epoch without improvement
    stop = EarlyStoppingHandler(Scripted([float("nan")]), mode="min")
    stop.train_begin(est)
    with pytest.warns(RuntimeWarning, match="is not updated"):
        assert stop.epoch_end(est) is False
    with pytest.raises(ValueError, match="CompositeEvalMetric"):
        EarlyStoppingHandler(mx.metric.CompositeEvalMetric([mx.metric.Accuracy()]))
    with pytest.raises(ValueError, match="monitor"):
        EarlyStoppingHandler("accuracy")


def test_early_stopping_in_fit():
    """mode='min' on accuracy with patience 0 stops as soon as accuracy does not fall."""
    est = estimator(lr=0.5)
    early = EarlyStoppingHandler(monitor=est.train_metrics[0], patience=0, mode="min")
    est.fit(loader(), epochs=20, event_handlers=[early])
    assert 0 < early.stopped_epoch < 19 and early.current_epoch == early.stopped_epoch + 1


def test_monitor_op_modes():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert _monitor_op(mx.metric.Accuracy(), "auto", "X") is np.greater
        assert _monitor_op(mx.metric.F1(), "auto", "X") is np.greater
        assert _monitor_op(mx.metric.Loss(), "auto", "X") is np.less
        assert _monitor_op(mx.metric.Loss(), "bogus", "X") is np.less
        assert _monitor_op(mx.metric.Accuracy(), "min", "X") is np.less
    assert len(w) == 5 and issubclass(w[3].category, RuntimeWarning) and "bogus" in str(w[3].message)


def test_text_progress_bar_on_a_terminal():
    """On a terminal the line is redrawn in place ('\\r', at most ten times a second) and ends
    with a newline at close."""
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Terminal()
    bar = progress.TextProgressBar(3, desc="[Epoch 0]", file=out)
    bar._last_draw = 0.0                      # as if the last draw were long ago
    bar.update(1)
    bar.update(2)                             # within 0.1 s of the previous draw: not drawn
    bar.close()
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and "3/3" in text.splitlines()[-1]
