"""CheckpointHandler: save parameters and trainer states periodically, keep the best, resume training.

Files in ``model_dir`` (MXNet 1.9.1's names)::

    {prefix}-symbol.json                 the hybridized network's graph, after the first batch
    {prefix}-epoch{E}batch{B}.params     parameters after epoch E / batch B (B counts from train begin)
    {prefix}-epoch{E}batch{B}.states     the Trainer's optimizer states
    {prefix}-best.params / .states       the best so far by ``monitor`` (save_best=True)

Only the newest ``max_checkpoints`` epoch/batch pairs are kept. ``resume_from_checkpoint`` loads
the newest pair found and shortens the estimator's ``max_epoch`` / ``max_batch`` by what it covers.
"""
from __future__ import annotations

import os
import re
import warnings

import numpy as np

from ....metric import EvalMetric
from .mixins import BatchEnd, EpochEnd, TrainBegin
from .utils import _monitor_op

__all__ = ["CheckpointHandler"]


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Save the model every ``epoch_period`` epochs and/or ``batch_period`` batches.

    Parameters
    ----------
    model_dir : str
        Folder for every file (created if missing).
    model_prefix : str, default 'model'
    monitor : EvalMetric, optional
        The metric that decides the best model (required with ``save_best``).
    verbose : int, default 0
        1 logs every save.
    save_best : bool, default False
    mode : {'auto', 'min', 'max'}, default 'auto'
        How ``monitor`` improves; 'auto' maximizes names holding 'acc' or 'f1', minimizes the rest.
    epoch_period : int or None, default 1
    batch_period : int or None, default None
    max_checkpoints : int, default 5
        Epoch/batch checkpoints kept (the best one is not counted).
    resume_from_checkpoint : bool, default False
        Load the newest checkpoint in ``model_dir`` at train begin and train only what is left.
        Needs the same kind of period as the training length (epochs or batches).
    """

    def __init__(self, model_dir, model_prefix="model", monitor=None, verbose=0, save_best=False,
                 mode="auto", epoch_period=1, batch_period=None, max_checkpoints=5,
                 resume_from_checkpoint=False):
        self.monitor = monitor
        self.verbose = verbose
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if self.save_best and not isinstance(self.monitor, EvalMetric):
            raise ValueError("To save best model only, please provide one of the metric objects "
                             "from estimator.train_metrics and estimator.val_metrics as monitor.")
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints = []
        self.trained_epoch = self.trained_batch = -1
        if self.save_best:
            self.monitor_op = _monitor_op(monitor, mode, "CheckpointHandler")
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    # -- events ---------------------------------------------------------------------------------
    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            error_msg = ("To use resume from checkpoint, you must only specify the same type of period "
                         "you used for training. For example, if you are training based on number of "
                         "epochs, you must save only based on epochs, and set batch_period to None.")
            if estimator.max_batch:
                assert self.batch_period, error_msg
                assert not self.epoch_period, error_msg
            if estimator.max_epoch:
                assert self.epoch_period, error_msg
                assert not self.batch_period, error_msg
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        if self.current_batch == 0:                     # the graph exists after the first forward
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    # -- saving ---------------------------------------------------------------------------------
    def _save_checkpoint(self, estimator):
        save_epoch, save_batch = self.current_epoch, self.current_batch
        if self.resume_from_checkpoint and self.trained_epoch >= 0:
            # numbers continue from the loaded checkpoint's; at an epoch end the batch counter has
            # already moved past the last batch, at a batch end it has not. NOTE: MXNet 1.9.1 also
            # adds the offsets when no checkpoint was found (-1), naming the first file epoch0batch3
            save_epoch += self.trained_epoch + 1
            save_batch += self.trained_batch + (0 if estimator.max_epoch else 1)
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, save_epoch, save_batch)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, "
                                  "saving model at %s with prefix: %s",
                                  self.current_epoch, self.current_batch + 1, self.model_dir, prefix)
        if self.save_best:
            self._save_if_best(estimator)

    def _save_if_best(self, estimator):
        monitor_name, monitor_value = self.monitor.get()
        if np.isnan(monitor_value):
            warnings.warn(f"Skipping save best because {monitor_name} is not updated, make sure you pass one "
                          "of the metric objects estimator.train_metrics and estimator.val_metrics as "
                          "monitor", RuntimeWarning, stacklevel=2)
        elif self.monitor_op(monitor_value, self.best):
            prefix = self.model_prefix + "-best"
            self._save_params_and_trainer(estimator, prefix)
            if self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f to %0.5f, "
                                      "updating best model at %s with prefix: %s", self.current_epoch,
                                      monitor_name, self.best, monitor_value, self.model_dir, prefix)
            self.best = monitor_value
        elif self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, "
                                  "skipping updating best model", self.current_epoch, monitor_name, self.best)

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        cached = getattr(estimator.net, "_cached_graph", None)
        if cached:
            cached[1].save(symbol_file)
        else:
            estimator.logger.info(
                "Model architecture(symbol file) is not saved, please use HybridBlock to construct your "
                "model, and call net.hybridize() before passing to Estimator in order to save model "
                "architecture as %s.", symbol_file)

    def _save_params_and_trainer(self, estimator, file_prefix):
        estimator.net.save_parameters(os.path.join(self.model_dir, file_prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, file_prefix + ".states"))
        if file_prefix.endswith("-best"):
            return
        self.saved_checkpoints.append(file_prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            self._remove(self.saved_checkpoints.pop(0))

    def _remove(self, file_prefix):
        # NOTE: exact names; MXNet 1.9.1 removes every file *starting with* the prefix, so dropping
        # epoch1batch8 also deleted epoch1batch80
        for ext in (".params", ".states"):
            path = os.path.join(self.model_dir, file_prefix + ext)
            if os.path.exists(path):
                os.remove(path)

    # -- resuming -------------------------------------------------------------------------------
    def _checkpoints(self):
        """``{(epoch, batch): file prefix}`` of the ``.params`` checkpoints in ``model_dir``."""
        head = self.model_prefix + "-epoch"
        pattern = re.compile(re.escape(head) + r"(\d+)batch(\d+)\.params")
        found = {}
        for fname in os.listdir(self.model_dir):
            if not (fname.startswith(head) and fname.endswith(".params")):
                continue
            match = pattern.fullmatch(fname)
            if match is None:
                raise ValueError(f"Error parsing checkpoint file {fname!r}, please check your "
                                 "checkpoints have the format: "
                                 "{model_name}-epoch{epoch_number}batch{batch_number}.params, "
                                 "there should also be a .states file for each .params file")
            found[int(match.group(1)), int(match.group(2))] = fname[:-len(".params")]
        return found

    def _resume_from_checkpoint(self, estimator):
        found = self._checkpoints()
        # the older checkpoints count toward max_checkpoints from now on, oldest first
        self.saved_checkpoints.extend(found[key] for key in sorted(found))
        self.trained_epoch, self.trained_batch = max(found) if found else (-1, -1)
        if self.trained_epoch == -1:
            msg = "CheckpointHandler: No checkpoint found, training from scratch for "
            msg += ("%d batches" % estimator.max_batch if estimator.max_batch
                    else "%d epochs" % estimator.max_epoch)
            estimator.logger.info(msg)
            return
        msg = "CheckpointHandler: Checkpoint resumed from epoch %d batch %d, continue to train for " % (
            self.trained_epoch, self.trained_batch)
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError("Found checkpoint with maximum number of epoch %d reached, please specify "
                                 "resume_from_checkpoint=False (default value) if you want to train from "
                                 "scratch." % estimator.max_epoch)
            estimator.max_epoch = estimator.max_epoch - self.trained_epoch - 1
            msg += "%d epochs " % estimator.max_epoch
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError("Found checkpoint with maximum number of batch %d reached, please specify "
                                 "resume_from_checkpoint=False (default value) if you want to train from "
                                 "scratch." % self.trained_batch)
            estimator.max_batch = estimator.max_batch - self.trained_batch - 1
            msg += "%d batches " % estimator.max_batch
        prefix = os.path.join(self.model_dir, found[self.trained_epoch, self.trained_batch])
        for path in (prefix + ".params", prefix + ".states"):
            assert os.path.exists(path), "Failed to load checkpoint, %s does not exist" % path
        estimator.net.load_parameters(prefix + ".params", ctx=estimator.context)
        estimator.trainer.load_states(prefix + ".states")
        estimator.logger.warning(msg)
