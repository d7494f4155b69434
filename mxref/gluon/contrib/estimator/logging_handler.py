"""LoggingHandler: training and validation progress in the estimator's log, and a progress bar."""
from __future__ import annotations

import time

from .mixins import BatchBegin, BatchEnd, EpochBegin, EpochEnd, TrainBegin, TrainEnd
from .progress import progress_bar
from .utils import _check_metrics

__all__ = ["LoggingHandler"]


def _metric_text(metrics, sep: str = ", ") -> str:
    return sep.join("%s: %.4f" % metric.get() for metric in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Log the optimizer, the metrics and the times, every epoch or every ``log_interval`` batches.

    The lines (to ``estimator.logger``, which prints to stdout) are MXNet 1.9.1's, e.g.
    ``[Epoch 0][Batch 5][Samples 48] time/interval: 0.012s training accuracy: 0.5000``.
    The handler tells a training epoch from a validation pass by the metric names: the Estimator
    names its training metrics ``'training ...'``.

    Parameters
    ----------
    log_interval : int or 'epoch', default 'epoch'
        'epoch': a line at each epoch's end; k: also a line every k batches.
    metrics : list of EvalMetric
        The metrics to report (``est.train_metrics`` for training, ``est.val_metrics`` for evaluation).
    priority : scalar, default inf
        Runs after every other handler, so the metrics it prints are up to date.
    progress_bar : bool, default False
        mxref extension: draw a bar over each training epoch's batches (tqdm when installed, a
        plain text bar otherwise) on stderr, with the metrics after it.
    """

    def __init__(self, log_interval="epoch", metrics=None, priority=float("inf"), progress_bar=False):
        super().__init__()
        if not isinstance(log_interval, int) and log_interval != "epoch":
            raise ValueError("log_interval must be either an integer or string 'epoch'")
        self.metrics = _check_metrics(metrics)
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0
        self._batches_seen = 0          # since train begin: how much of a batches= budget is spent
        self.progress_bar = progress_bar
        self._bar = None

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning rate %.4f ",
                              type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0
        self._batches_seen = 0

    def train_end(self, estimator, *args, **kwargs):
        self._close_bar()
        train_time = time.time() - self.train_start
        msg = "Train finished using total %ds with %d epochs. " % (train_time, self.current_epoch)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            batch_time = time.time() - self.batch_start
            self.processed_samples += kwargs["batch"][0].shape[0]
            msg = "[Epoch %d][Batch %d][Samples %s] " % (self.current_epoch, self.batch_index,
                                                         self.processed_samples)
            self.log_interval_time += batch_time
            if self.batch_index % self.log_interval == 0:
                msg += "time/interval: %.3fs " % self.log_interval_time
                self.log_interval_time = 0
                estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        if self._bar is not None:
            self._bar.set_postfix_str(_metric_text(self.metrics), refresh=False)
            self._bar.update(1)
            if self._bar.total and self._bar.n >= self._bar.total:
                self._close_bar()           # now, not at epoch end: validation runs in between
        self.batch_index += 1
        self._batches_seen += 1

    def _is_training(self) -> bool:
        return any("training" in metric.name for metric in self.metrics)

    def epoch_begin(self, estimator, *args, **kwargs):
        self.epoch_start = time.time()
        if self._is_training():
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
            if self.progress_bar:
                self._close_bar()
                self._bar = progress_bar(self._epoch_total(estimator), desc="[Epoch %d]" % self.current_epoch)
        else:
            estimator.logger.info("Validation Begin")

    def _epoch_total(self, estimator):
        """Batches this epoch will run: the loader's length, cut short by a ``batches=`` limit."""
        total = getattr(estimator, "_epoch_batches", None)
        max_batch = getattr(estimator, "max_batch", None)
        if max_batch:
            left = max(0, max_batch - self._batches_seen)
            total = left if total is None else min(total, left)
        return total

    def epoch_end(self, estimator, *args, **kwargs):
        self._close_bar()
        epoch_time = time.time() - self.epoch_start
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch, epoch_time)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0

    def _close_bar(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None
