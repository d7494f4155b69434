"""``BucketingModule``: one ``Module`` per bucket key (e.g. sequence length), all sharing parameters.

``sym_gen(bucket_key)`` returns ``(symbol, data_names, label_names)`` for a key. The module of
``default_bucket_key`` is bound first and owns the parameters, the optimizer and the memory
pool; a batch with another ``bucket_key`` binds (once) a module for it with
``shared_module=`` the default one, so its executors reuse the default's parameter arrays and
memory. The default key should therefore be the largest bucket.
"""
from __future__ import annotations

import logging
from typing import Callable, Dict, Optional

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..context import cpu
from ..initializer import Uniform
from ..model import load_params
from ..name import NameManager
from .base_module import BaseModule
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """A module that switches between per-bucket ``Module``s sharing one set of parameters.

    Parameters
    ----------
    sym_gen : callable
        ``sym_gen(bucket_key) -> (symbol, data_names, label_names)``.
    default_bucket_key : hashable
        The key bound first (the largest bucket).
    context, work_load_list, fixed_param_names, state_names, group2ctxs, compression_params
        As for ``Module``; every bucket's module gets them.

    Examples
    --------
    >>> def sym_gen(seq_len):
    ...     data = mx.sym.Variable('data')                    # (batch, seq_len)
    ...     net = mx.sym.FullyConnected(mx.sym.sum(data, axis=1, keepdims=True), num_hidden=2)
    ...     return mx.sym.SoftmaxOutput(net, name='softmax'), ('data',), ('softmax_label',)
    >>> mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=10)
    """

    def __init__(self, sym_gen: Callable, default_bucket_key=None, logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise MXNetError("BucketingModule: default_bucket_key is required")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        self._call_sym_gen(default_bucket_key)          # fail early on a bad sym_gen
        self._fixed_param_names = list(fixed_param_names or [])
        self._state_names = list(state_names or [])
        self._context = cpu() if context is None else context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._compression_params = compression_params
        self._buckets: Dict[object, Module] = {}
        self._curr_module: Optional[Module] = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None
        self._preloaded = None        # (arg_params, aux_params) from BucketingModule.load

    # -- checkpoints -------------------------------------------------------------------------
    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """Write ``prefix-%04d.params``, ``prefix-<key>-symbol.json`` per bucket and ``prefix.buckets``.

        As in MXNet, the bucket keys are saved as one int32 NDArray, so they must be integers.
        """
        if not self._buckets:
            raise MXNetError("save_checkpoint: an empty BucketingModule (never bound) cannot be saved")
        self.save_params("%s-%04d.params" % (prefix, epoch))
        for key in self._buckets:
            self._call_sym_gen(key)[0].save(f"{prefix}-{key}-symbol.json", remove_amp_cast=remove_amp_cast)
        nd.save(f"{prefix}.buckets", nd.array(list(self._buckets), dtype=np.int32))

    @staticmethod
    def load(prefix: str, epoch: int, sym_gen: Callable = None, default_bucket_key=None,
             **kwargs) -> "BucketingModule":
        """A module with the parameters of ``prefix-%04d.params``, set when it is bound.

        The buckets' symbols come from ``sym_gen`` (which ``save_checkpoint`` also used), so the
        per-bucket JSON files are not needed to resume.
        """
        if sym_gen is None or default_bucket_key is None:
            raise MXNetError("BucketingModule.load: sym_gen and default_bucket_key are required")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        mod._preloaded = load_params(prefix, epoch)
        mod.params_initialized = True
        return mod

    def _call_sym_gen(self, key):
        # A fresh NameManager per call, as MXNet: every bucket's unnamed layers get the same
        # names (embedding0_weight), so the buckets share their parameters.
        with NameManager():
            symbol, data_names, label_names = self._sym_gen(key)
        return symbol, list(data_names or []), list(label_names or [])

    def _batch_shapes(self, key, data_batch):
        """The batch's ``provide_data``/``provide_label``, or shapes read off its arrays."""
        dshapes, lshapes = data_batch.provide_data, data_batch.provide_label
        if dshapes is None and key not in self._buckets:
            _, data_names, label_names = self._call_sym_gen(key)
            dshapes = [(n, tuple(a.shape)) for n, a in zip(data_names, data_batch.data)]
            if data_batch.label and self.for_training:
                lshapes = [(n, tuple(a.shape)) for n, a in zip(label_names, data_batch.label)]
        return dshapes, lshapes

    def _new_module(self, key) -> Module:
        symbol, data_names, label_names = self._call_sym_gen(key)
        return Module(symbol, data_names, label_names, logger=self.logger, context=self._context,
                      work_load_list=self._work_load_list, fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names, group2ctxs=self._group2ctxs,
                      compression_params=self._compression_params)

    def _reset_bind(self) -> None:
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    # -- names and shapes (the current bucket's) ---------------------------------------------
    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        self._check_bound("data_shapes")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        self._check_bound("label_shapes")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        self._check_bound("output_shapes")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        """The current bucket's symbol."""
        self._check_bound("symbol")
        return self._curr_module.symbol

    def _check_bound(self, what: str) -> None:
        if not self.binded:
            raise MXNetError(f"{what}: call bind() first")

    # -- parameters --------------------------------------------------------------------------
    def get_params(self):
        """``(arg_params, aux_params)`` shared by all buckets, as CPU copies."""
        self._check_ready("get_params")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def _assign_params(self, arg_params, aux_params, force_init: bool, allow_extra: bool) -> None:
        """``set_params(..., allow_missing=True)``: the current bucket's arrays, shared by all buckets."""
        self._curr_module.set_params(arg_params, aux_params, allow_missing=True,
                                     force_init=force_init, allow_extra=allow_extra)

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing: bool = False, force_init: bool = False, allow_extra: bool = False) -> None:
        """Initialize the shared parameters (through the current bucket's module)."""
        if self.params_initialized and not force_init:
            return
        self._check_bound("init_params")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    # -- binding -----------------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module=None,
             grad_req="write") -> None:
        """Bind the default bucket's module for these shapes."""
        if self.params_initialized:
            arg_params, aux_params = self.get_params() if self.binded else self._preloaded
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MXNetError("BucketingModule.bind: shared_module is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        module = self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind=False,
                    shared_module=None, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None) -> None:
        """Make ``bucket_key``'s module current, binding it (sharing the default's) the first time."""
        self._check_bound("switch_bucket")
        if bucket_key not in self._buckets:
            module = self._new_module(bucket_key)
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key], grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init: bool = False) -> None:
        """Create the optimizer once; every bucket's module borrows it."""
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # -- computation -------------------------------------------------------------------------
    def prepare(self, data_batch, sparse_row_id_fn=None) -> None:
        """Bind the batch's bucket ahead of time, keeping the current bucket current."""
        self._check_ready("prepare")
        key = self._curr_bucket_key
        new_key = getattr(data_batch, "bucket_key", None)
        if new_key is None:
            return
        self.switch_bucket(new_key, *self._batch_shapes(new_key, data_batch))
        self.switch_bucket(key, None, None)

    def forward(self, data_batch, is_train: Optional[bool] = None) -> None:
        """Switch to the batch's bucket (``data_batch.bucket_key``) and run its forward pass."""
        self._check_ready("forward")
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            key = self._default_bucket_key
        self.switch_bucket(key, *self._batch_shapes(key, data_batch))
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None) -> None:
        """The current bucket's backward pass."""
        self._check_ready("backward")
        self._curr_module.backward(out_grads=out_grads)

    def update(self) -> None:
        """Update the shared parameters from the current bucket's gradients."""
        if not (self.binded and self.params_initialized and self.optimizer_initialized):
            raise MXNetError("update: call bind(), init_params() and init_optimizer() first")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context: bool = True):
        """The current bucket's outputs."""
        self._check_ready("get_outputs")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True):
        """The current bucket's input gradients."""
        self._check_ready("get_input_grads")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        """Accumulate ``eval_metric`` over the current bucket's outputs."""
        self._check_ready("update_metric")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon) -> None:
        """Attach a monitor to every bucket's executors, present and future."""
        self._check_bound("install_monitor")
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)
