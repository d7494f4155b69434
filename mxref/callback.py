"""Training callbacks (``mx.callback``): checkpoints at epoch end, speed, progress and metric logs.

An *epoch-end* callback is called as ``cb(epoch, symbol, arg_params, aux_params)``; a *batch-end*
callback as ``cb(param)`` with a ``BatchEndParam`` (``epoch``, ``nbatch``, ``eval_metric``,
``locals``). ``Module.fit`` calls both kinds; ``score`` calls batch-end ones.
"""
from __future__ import annotations

import logging
import math
import time
from typing import Callable

from .model import save_checkpoint

__all__ = ["module_checkpoint", "do_checkpoint", "log_train_metric", "Speedometer", "ProgressBar",
           "LogValidationMetricsCallback"]


def module_checkpoint(mod, prefix: str, period: int = 1, save_optimizer_states: bool = False) -> Callable:
    """An epoch-end callback calling ``mod.save_checkpoint(prefix, epoch + 1)`` every ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix: str, period: int = 1) -> Callable:
    """An epoch-end callback writing ``prefix-symbol.json`` and ``prefix-%04d.params``.

    The file of epoch ``e`` (counted from 0) is numbered ``e + 1``, every ``period`` epochs, so
    ``mx.model.load_checkpoint(prefix, num_epoch)`` reads the last one.
    """
    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Callable:
    """A batch-end callback logging the training metric every ``period`` batches."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Log training speed (samples/s) and the metric every ``frequent`` batches.

    Parameters
    ----------
    batch_size : int
        Samples per batch, to turn batches per second into samples per second.
    frequent : int
        Log every this many batches.
    auto_reset : bool
        Reset the metric's local statistics after each log, so each line shows only the
        batches since the previous one (the end-of-epoch line still uses global statistics).

    Attributes
    ----------
    speed : float or None
        The last speed measured, in samples per second.
    """

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0
        self.speed = None

    def __call__(self, param) -> None:
        count = param.nbatch
        if self.last_count > count:      # a new epoch started: the clock restarts
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = time.time() - self.tic
        self.speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            pairs = [x for nv in name_value for x in nv]
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count - self.frequent, count, self.speed, *pairs)
            else:
                msg = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count, self.speed, *pairs)
        else:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, self.speed)
        self.tic = time.time()


class ProgressBar:
    """A batch-end callback logging a text progress bar ``[=====-----] 50%``.

    Parameters
    ----------
    total : int
        Batches per epoch.
    length : int
        Width of the bar in characters.
    """

    def __init__(self, total: int, length: int = 80):
        self.bar_len = length
        self.total = total

    def __call__(self, param) -> None:
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        bar = "=" * filled + "-" * (self.bar_len - filled)
        logging.info("[%s] %s%s\r", bar, percents, "%")


class LogValidationMetricsCallback:
    """An ``eval_end_callback`` logging ``Epoch[e] Validation-<name>=<value>`` for each metric."""

    def __call__(self, param) -> None:
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
