"""Estimator: a ready-made training loop for a Gluon network, driven by event handlers.

``fit`` is this loop; everything else (the optimizer step, metrics, validation, logging, stopping,
checkpoints) is an event handler called at the six events::

    train_begin
    repeat:  epoch_begin
             for batch in train_data:  batch_begin;  fit_batch (forward, loss, backward);  batch_end
             epoch_end
    train_end

A ``batch_end`` returning True ends the epoch early; an ``epoch_end`` returning True ends training.
"""
from __future__ import annotations

import copy
import logging
import sys
import warnings

from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as metric_loss
from ...data import DataLoader
from ...loss import Loss as gluon_loss
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    ValidationHandler,
)
from .mixins import BatchBegin, BatchEnd, EpochBegin, EpochEnd, TrainBegin, TrainEnd, _check_event_handlers
from .utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ["Estimator"]


class Estimator:
    """Train and evaluate a Gluon network with event handlers.

    Parameters
    ----------
    net : gluon.Block
        The model to train.
    loss : gluon.loss.Loss
        The training objective.
    train_metrics, val_metrics : EvalMetric or list of EvalMetric, optional
        Default: accuracy for ``SoftmaxCrossEntropyLoss`` plus the mean loss; validation metrics
        default to copies of the training ones. Names get a ``'training '`` / ``'validation '``
        prefix (handlers rely on it).
    initializer : Initializer, optional
        Used when ``net`` is not (fully) initialized; a fully initialized net is left alone, with
        a warning if an initializer was given.
    trainer : gluon.Trainer, optional
        Default: SGD with learning rate 0.001 (with a warning).
    context : Context or list of Context, optional
        Default: ``gpu(0)`` when there is a GPU, else ``cpu()``.
    val_net : gluon.Block, optional
        The model used for validation (default ``net``), usually sharing ``net``'s parameters.
    val_loss : gluon.loss.Loss, optional
        The validation loss (default ``loss``).
    batch_processor : BatchProcessor, optional
        Any object with ``fit_batch`` and ``evaluate_batch`` (default ``BatchProcessor()``).

    Examples
    --------
    >>> est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer)
    >>> est.fit(train_loader, val_data=val_loader, epochs=3,
    ...         event_handlers=[LoggingHandler(metrics=est.train_metrics, progress_bar=True)])
    """

    logger = None
    """A ``logging.Logger`` of this estimator's own (INFO and above to stdout); handlers log here."""

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None, trainer=None,
                 context=None, val_net=None, val_loss=None, batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self._check_loss(val_loss) if val_loss is not None else self.loss
        self.val_net = val_net if val_net is not None else self.net
        # NOTE: a fresh Logger object, not logging.getLogger: it is not registered globally, so two
        # estimators never share handlers and the root logger's configuration does not apply
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = self.max_batch = None
        self.batch_axis = 0
        self._epoch_batches = None     # len(train_data) while fitting, for progress bars

    # -- argument checks ------------------------------------------------------------------------
    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, gluon_loss):
            raise ValueError(f"loss must be a Loss, refer to gluon.loss.Loss:{loss}")
        return loss

    @staticmethod
    def _check_context(context):
        gpus = num_gpus()
        available_gpus = [gpu(i) for i in range(gpus)]
        if context:
            if isinstance(context, Context):
                context = [context]
            elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
                raise ValueError("context must be a Context or a list of Context, for example mx.cpu() or "
                                 f"[mx.gpu(0), mx.gpu(1)], refer to mxnet.Context:{context}")
            for ctx in context:
                assert ctx in available_gpus or str(ctx).startswith("cpu"), \
                    "%s is not available, please make sure your context is in one of: mx.cpu(), %s" % (
                        ctx, ", ".join(str(c) for c in available_gpus))
            return context
        if gpus > 1:
            warnings.warn("You have multiple GPUs, gpu(0) will be used by default. To utilize all your "
                          "GPUs, specify context as a list of gpus, e.g. context=[mx.gpu(0), mx.gpu(1)] ",
                          stacklevel=2)
        return [gpu(0)] if gpus > 0 else [cpu()]

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, "fit_batch", None))
                and callable(getattr(batch_processor, "evaluate_batch", None))):
            raise ValueError("Customized Batch Processor must contain fit_batch() and evaluate_batch() "
                             "methods")
        return batch_processor

    def _initialize(self, initializer):
        # layers already initialized keep their values (fine-tuning: a pretrained body, a new head)
        if not self._is_initialized():
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. You don't need to "
                          "pass initializer if you already initialized your net. You can use "
                          "net.initialize(init=your_initializer, force_reinit=True) to force re-initialize.",
                          stacklevel=2)

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate 0.001 is used.",
                          stacklevel=2)
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError(f"Trainer must be a Gluon Trainer instance, refer to gluon.Trainer:{trainer}")
        return trainer

    def _is_initialized(self):
        params = self.net.collect_params()
        for name in params:
            try:
                params[name].list_ctx()
            except RuntimeError:
                return False
        return True

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        """MXNet 1.9.1 keeps this here too; the batch processor's is the one ``fit`` uses."""
        return BatchProcessor()._get_data_and_label(batch, ctx, batch_axis)

    # -- metrics --------------------------------------------------------------------------------
    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            # the loss block's name without its counter: 'softmaxcrossentropyloss0' -> '...loss'
            self._train_metrics.append(metric_loss(self.loss.name.rstrip("1234567890")))
        for metric in self._train_metrics:
            metric.name = "training " + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            if "training" in metric.name:
                metric.name = metric.name.replace("training", "validation")
            else:
                metric.name = "validation " + metric.name

    @property
    def train_metrics(self):
        return self._train_metrics

    @property
    def val_metrics(self):
        return self._val_metrics

    # -- the loops ------------------------------------------------------------------------------
    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Run ``batch_processor.evaluate_batch`` over ``val_data`` (a DataLoader).

        A MetricHandler and a LoggingHandler over ``val_metrics`` are added unless given; the
        epoch_begin / batch_begin / batch_end / epoch_end events of ``event_handlers`` are called.
        """
        if not isinstance(val_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. Alternatively, you can "
                             "transform your DataIter or any NDArray into Gluon DataLoader. "
                             "Refer to gluon.data.DataLoader")
        for metric in self.val_metrics:
            metric.reset()
        event_handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(event_handlers)
        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None, batch_axis=0):
        """Train on ``train_data`` (a DataLoader) for ``epochs`` epochs or ``batches`` batches (one of them).

        Parameters
        ----------
        train_data : DataLoader
        val_data : DataLoader, optional
            When given (and no ValidationHandler is), evaluated after every epoch.
        epochs, batches : int
            Exactly one: the length of training.
        event_handlers : EventHandler or list of EventHandler
            Added to the defaults: StoppingHandler, GradientUpdateHandler, MetricHandler,
            LoggingHandler (and ValidationHandler with ``val_data``), each unless one of its
            type is given. All handlers must watch metrics from ``train_metrics`` / ``val_metrics``.
        batch_axis : int, default 0
            The axis along which batches are split across contexts.
        """
        if not isinstance(train_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. Alternatively, you can "
                             "transform your DataIter or any NDArray into Gluon DataLoader. "
                             "Refer to gluon.data.dataloader")
        if (not epochs) == (not batches):
            raise ValueError("Fit only support exactly one type of iteration, train by number of epochs or "
                             "number of batches. Please specify one and only one of: epochs or batches.")
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        try:
            self._epoch_batches = len(train_data)
        except TypeError:
            self._epoch_batches = None

        event_handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(event_handlers)
        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                # every handler sees the batch end, even after one of them asked to stop
                stop = [handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                        for handler in batch_end]
                if any(stop):
                    break
            stop = [handler.epoch_end(self) for handler in epoch_end]
            if any(stop):
                break
        for handler in train_end:
            handler.train_end(self)

    # -- handlers -------------------------------------------------------------------------------
    def _prepare_default_handlers(self, val_data, event_handlers):
        event_handlers = _check_event_handlers(event_handlers)
        added = [StoppingHandler(self.max_epoch, self.max_batch)]

        def missing(kind):
            return not any(isinstance(handler, kind) for handler in event_handlers)

        if missing(GradientUpdateHandler):
            added.append(GradientUpdateHandler())
        if missing(MetricHandler):
            added.append(MetricHandler(metrics=self.train_metrics))
        if missing(ValidationHandler) and val_data:
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if missing(LoggingHandler):
            added.append(LoggingHandler(metrics=self.train_metrics))
        # user handlers mixed with defaults must watch the metrics the defaults update
        mixing = bool(event_handlers) and bool(added)
        event_handlers.extend(added)
        if mixing:
            known = set(self.train_metrics + self.val_metrics)
            for handler in event_handlers:
                _check_handler_metric_ref(handler, known)
        event_handlers.sort(key=lambda handler: getattr(handler, "priority", 0))
        return event_handlers

    def _prepare_default_validation_handlers(self, event_handlers):
        event_handlers = _check_event_handlers(event_handlers)
        added = []
        if not any(isinstance(handler, MetricHandler) for handler in event_handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(handler, LoggingHandler) for handler in event_handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        mixing = bool(event_handlers) and bool(added)
        event_handlers.extend(added)
        if mixing:
            known = set(self.val_metrics)
            for handler in event_handlers:
                _check_handler_metric_ref(handler, known)
        event_handlers.sort(key=lambda handler: getattr(handler, "priority", 0))
        return event_handlers

    @staticmethod
    def _categorize_handlers(event_handlers):
        """The handlers of each event, in order: train_begin, epoch_begin, batch_begin, batch_end,
        epoch_end, train_end (a handler is called only for the events whose mixin it subclasses)."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in event_handlers if isinstance(h, kind)] for kind in kinds)
