"""``BaseModule``: the high-level training loop (``fit``, ``score``, ``predict``) over a module's steps.

A module implements the intermediate steps (``bind``, ``init_params``, ``init_optimizer``,
``forward``, ``backward``, ``update``, ``update_metric``, ``get_outputs``, ``get_params``); this
class builds ``fit``, ``score``, ``predict`` and ``iter_predict`` from them, exactly as MXNet's
``BaseModule`` does, so any module (``Module``, ``BucketingModule``) gets them for free.
"""
from __future__ import annotations

import logging
import time
import warnings
from typing import List, Optional

import numpy as np

from .. import metric as _metric
from .. import ndarray as nd
from ..base import MXNetError
from ..initializer import Uniform
from ..io.base import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam, params_to_save_dict, split_save_dict

__all__ = ["BaseModule"]


def _as_list(obj) -> list:
    """``obj`` itself if it is a list or tuple, else ``[obj]``."""
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _check_input_names(symbol, names: List[str], typename: str, throw: bool) -> None:
    """Every name in ``names`` must be an argument of ``symbol``; say which ones look like typos."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [arg for arg in args if not arg.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (f"You created Module with Module(..., {typename}_names={names}) but input with name "
               f"'{name}' is not found in symbol.list_arguments(). Did you mean one of:\n\t"
               + "\n\t".join(candidates))
        if throw:
            raise ValueError(msg)
        logging.warning(msg)


def _check_names_match(data_names, data_shapes, name: str, throw: bool) -> None:
    actual = [x[0] for x in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = (f"Data provided by {name}_shapes don't match names specified by {name}_names "
               f"({data_shapes} vs. {data_names})")
        if throw:
            raise ValueError(msg)
        logging.warning(msg)


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """``DataDesc`` lists from ``(name, shape)`` pairs, checked against the module's input names."""
    data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


class BaseModule:
    """The module interface and the training / evaluation loops built on it.

    State flags: ``binded``, ``for_training``, ``inputs_need_grad``, ``params_initialized``,
    ``optimizer_initialized``. Subclasses implement the steps listed in the module docstring.
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # -- high-level API ----------------------------------------------------------------------
    def forward_backward(self, data_batch) -> None:
        """``forward(data_batch, is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data: DataIter, eval_metric, num_batch: Optional[int] = None,
              batch_end_callback=None, score_end_callback=None, reset: bool = True,
              epoch: int = 0, sparse_row_id_fn=None):
        """Run inference over ``eval_data`` and return ``eval_metric.get_name_value()``.

        Parameters
        ----------
        eval_data : DataIter
        eval_metric : str, EvalMetric or list
            Reset before use.
        num_batch : int, optional
            Stop after this many batches.
        batch_end_callback, score_end_callback : callable or list, optional
            Called with a ``BatchEndParam`` after each batch / at the end.
        reset : bool
            Reset ``eval_data`` first.
        epoch : int
            Passed on to the callbacks.
        """
        self._check_ready("score")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [eb.label for eb in eval_batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric,
                                   locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data: DataIter, num_batch: Optional[int] = None, reset: bool = True,
                     sparse_row_id_fn=None):
        """Yield ``(outputs, batch_index, batch)`` per batch; padding is cut off the outputs."""
        self._check_ready("iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch: Optional[int] = None, merge_batches: bool = True,
                reset: bool = True, always_output_list: bool = False, sparse_row_id_fn=None):
        """Run inference and collect the outputs.

        With ``merge_batches`` the result is one array per output, batches joined along axis 0
        (padding dropped); a single output is returned bare unless ``always_output_list``.
        Without it, a list per batch of its outputs. ``eval_data`` may also be one NDArray or
        numpy array, run as a single batch.

        Examples
        --------
        >>> prob = mod.predict(val_iter)          # (num_examples, num_classes)
        """
        self._check_ready("predict")
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError("eval_data must be of type NDArray or DataIter")
        output_list = [[out.copy() for out in outputs]
                       for outputs, _, _ in self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)]
        if not output_list or not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        if any(len(out) != num_outputs for out in output_list):
            raise MXNetError("predict: cannot merge batches, as the number of outputs is not the same "
                             "in all mini-batches (bucketing?); use merge_batches=False")
        merged = [nd.concat(*[out[i] for out in output_list], dim=0) if len(output_list) > 1
                  else output_list[0][i] for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data: DataIter, eval_data: Optional[DataIter] = None, eval_metric="acc",
            epoch_end_callback=None, batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing: bool = False, force_rebind: bool = False,
            force_init: bool = False, begin_epoch: int = 0, num_epoch: Optional[int] = None,
            validation_metric=None, monitor=None, sparse_row_id_fn=None) -> None:
        """Train: bind, initialize, then for each epoch run every batch and evaluate.

        Parameters
        ----------
        train_data, eval_data : DataIter
            Training data; optional validation data scored after every epoch.
        eval_metric : str or EvalMetric
            Training metric (default accuracy); ``validation_metric`` defaults to it.
        epoch_end_callback : callable or list
            ``cb(epoch, symbol, arg_params, aux_params)`` after each epoch (e.g. ``do_checkpoint``).
        batch_end_callback : callable or list
            ``cb(BatchEndParam)`` after each batch (e.g. ``Speedometer``).
        kvstore : str, KVStore or None
            How gradients of several devices are combined (``'local'``, ``'device'``, ``'dist_sync'``).
        optimizer, optimizer_params
            Name and arguments for ``mx.optimizer.create`` (or an ``Optimizer``).
        initializer : Initializer
            For parameters not given in ``arg_params`` (default ``Uniform(0.01)``).
        begin_epoch, num_epoch : int
            Epoch range; ``num_epoch`` is required.

        Notes
        -----
        The next batch is fetched, and the module prepared for it, before the current batch's
        metric is read, so data loading overlaps with the pushed computation.
        """
        if num_epoch is None:
            raise ValueError("please specify number of epochs")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            eval_name_vals = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [db.label for db in data_batch], pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            # Sync auxiliary states across devices (each device updated its own from its slice).
            arg_params_now, aux_params_now = self.get_params()
            self.set_params(arg_params_now, aux_params_now)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params_now, aux_params_now)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    # -- parameters --------------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_missing: bool = False, force_init: bool = True,
                   allow_extra: bool = False) -> None:
        """Assign parameter values (before or after ``init_params``).

        Without ``allow_missing`` this is ``init_params`` with these values; with it, the given
        values are written over the current ones (subclasses say where, in ``_assign_params``).
        """
        if not allow_missing or not hasattr(self, "_assign_params"):
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call "
                          "ignored.", stacklevel=2)
            return
        self._assign_params(arg_params, aux_params, force_init, allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def save_params(self, fname: str) -> None:
        """Write the parameters to ``fname`` in MXNet's format (``arg:``/``aux:`` keys)."""
        nd.save(fname, params_to_save_dict(*self.get_params()))

    def load_params(self, fname: str) -> None:
        """Read parameters written by ``save_params`` (or MXNet) and assign them."""
        self.set_params(*split_save_dict(nd.load(fname), fname, strict=True))

    def _check_ready(self, what: str) -> None:
        if not (self.binded and self.params_initialized):
            raise MXNetError(f"{what}: call bind() and init_params() first")

    # -- hooks with defaults -----------------------------------------------------------------
    def prepare(self, data_batch, sparse_row_id_fn=None) -> None:
        """Get ready for ``data_batch`` (bucketing switches bucket here); nothing by default."""

    def install_monitor(self, mon) -> None:
        """Attach a monitor to the executors."""
        raise NotImplementedError()

    @property
    def symbol(self):
        """The module's symbol (for bucketing, the current bucket's)."""
        return self._symbol

