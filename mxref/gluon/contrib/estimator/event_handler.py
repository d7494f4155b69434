"""Gluon event handlers for the Estimator: stopping, metrics, validation, gradient update, early stop.

``LoggingHandler`` (with its progress bar) and ``CheckpointHandler`` live in their own files and
are exported from here too, so ``estimator.event_handler.X`` names every handler as in MXNet.
The default handlers and their priorities (lower runs first) are::

    GradientUpdateHandler -2000   trainer.step(batch size) at batch end
    MetricHandler         -1000   reset metrics at epoch begin, update them at batch end
    ValidationHandler     -1000   run the evaluation every epoch_period epochs / batch_period batches
    StoppingHandler           0   stop after max_epoch epochs or max_batch batches
    LoggingHandler          inf   log last, when every metric is up to date
"""
from __future__ import annotations

import warnings

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as metric_loss
from .checkpoint_handler import CheckpointHandler
from .logging_handler import LoggingHandler
from .mixins import (
    BatchBegin,
    BatchEnd,
    EpochBegin,
    EpochEnd,
    TrainBegin,
    TrainEnd,
    _check_event_handlers,  # noqa: F401  (MXNet's estimator imports it from here)
)
from .utils import _check_metrics, _monitor_op

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd",
           "StoppingHandler", "MetricHandler", "ValidationHandler", "LoggingHandler",
           "CheckpointHandler", "EarlyStoppingHandler", "GradientUpdateHandler"]


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stop training once ``max_epoch`` epochs or ``max_batch`` batches have run.

    ``fit`` adds one by default; it takes both limits from the estimator at train begin.
    """

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Reset ``metrics`` at epoch begin and update them with each batch's predictions and labels.

    A ``metric.Loss`` is updated with the batch's loss values instead of (label, pred).

    Parameters
    ----------
    metrics : EvalMetric or list of EvalMetric
    priority : scalar, default -1000
        Metrics must be current before the handlers that read them run.
    """

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        pred, label, loss = kwargs["pred"], kwargs["label"], kwargs["loss"]
        for metric in self.metrics:
            if isinstance(metric, metric_loss):
                metric.update(0, loss)
            else:
                metric.update(label, pred)


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Run ``eval_fn`` on ``val_data`` every ``epoch_period`` epochs and/or ``batch_period`` batches.

    Parameters
    ----------
    val_data : DataLoader
    eval_fn : callable
        Called as ``eval_fn(val_data=, batch_axis=, event_handlers=)``; usually ``est.evaluate``.
    epoch_period : int or None, default 1
    batch_period : int or None, default None
    priority : scalar, default -1000
    event_handlers : EventHandler or list of EventHandler
        Handed to ``eval_fn`` for the validation loop.
    """

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = 0
        self.current_epoch = 0

    def _validate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._validate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._validate(estimator)


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stop training when ``monitor`` has not improved for ``patience`` epochs.

    An epoch improves when ``value - min_delta > best`` (mode max) or ``value + min_delta < best``
    (mode min); ``best`` starts at ``baseline`` or at -inf / +inf.

    Parameters
    ----------
    monitor : EvalMetric
        One of ``estimator.train_metrics`` / ``estimator.val_metrics`` (not a composite).
    min_delta : float, default 0
    patience : int, default 0
        Epochs without improvement to accept; the next one stops training.
    mode : {'auto', 'min', 'max'}, default 'auto'
        'auto' maximizes names holding 'acc' or 'f1' and minimizes the rest.
    baseline : float, optional
    """

    def __init__(self, monitor, min_delta=0, patience=0, mode="auto", baseline=None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError("Please provide one of the metric objects from estimator.train_metrics and "
                             "estimator.val_metrics as monitor.")
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError("CompositeEvalMetric is not supported for EarlyStoppingHandler, "
                             "please specify a simple metric instead.")
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.monitor_op = _monitor_op(monitor, mode, "EarlyStopping")
        # the sign makes one comparison serve both modes: value - min_delta vs best
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        monitor_name, monitor_value = self.monitor.get()
        if np.isnan(monitor_value):
            warnings.warn(f"{monitor_name} is not updated, make sure you pass one of the metric objects "
                          "from estimator.train_metrics and estimator.val_metrics as monitor.",
                          RuntimeWarning, stacklevel=2)
        elif self.monitor_op(monitor_value - self.min_delta, self.best):
            self.best = monitor_value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHandler: early stopping due to %s not improving",
                                  self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """``trainer.step(batch_size)`` at batch end, the batch size counted from the loss arrays.

    Parameters
    ----------
    priority : scalar, default -2000
        First of all handlers, so that the metrics and logs see the step taken.
    """

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs["loss"]
        losses = loss if isinstance(loss, list) else [loss]
        estimator.trainer.step(sum(l.shape[0] for l in losses))  # noqa: E741
