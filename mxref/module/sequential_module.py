"""``SequentialModule``: modules chained so that each one's outputs are the next one's data."""
from __future__ import annotations

import copy
import logging

from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule


class SequentialModule(BaseModule):
    """A chain of modules run one after another (``mx.mod.SequentialModule``).

    ``add(module, take_labels=True)`` feeds the batch's labels to that module too (any module in
    the chain may take them); ``auto_wiring=True`` renames the previous outputs to the module's
    own ``data_names`` when binding. Backward runs the chain in reverse, handing each module's
    input gradients to the one before it as ``out_grads``, so every module after the first is
    bound with ``inputs_need_grad``.

    Example
    -------
    >>> seq = mx.mod.SequentialModule()
    >>> seq.add(mod1).add(mod2, take_labels=True, auto_wiring=True)
    """
    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules: list = []
        self._metas: list = []
        self._label_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs) -> "SequentialModule":
        """Append ``module``; ``kwargs`` are its meta flags (``take_labels``, ``auto_wiring``).
        Returns ``self`` so that calls chain."""
        for key in kwargs:
            if key not in self._meta_keys:
                raise MXNetError(f"SequentialModule.add: unknown meta {key!r} "
                                 f"(known: {sorted(self._meta_keys)})")
        self._modules.append(module)
        self._metas.append(kwargs)
        # a new link invalidates whatever was bound or initialised before
        self.binded = self.params_initialized = self.optimizer_initialized = False
        return self

    def _takes_labels(self, i: int) -> bool:
        return bool(self._metas[i].get(self.META_TAKE_LABELS, False))

    # -- names and shapes: data from the first module, outputs from the last -------------------
    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        assert self.binded, "SequentialModule.data_shapes: call bind() first"
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        assert self.binded, "SequentialModule.label_shapes: call bind() first"
        return self._label_shapes

    @property
    def output_shapes(self):
        assert self.binded, "SequentialModule.output_shapes: call bind() first"
        return self._modules[-1].output_shapes

    # -- parameters ------------------------------------------------------------------------
    def get_params(self):
        """The union of every module's ``(arg_params, aux_params)``."""
        self._check_ready("SequentialModule.get_params")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False) -> None:
        """Initialise every module; two modules may not own a parameter of the same name."""
        if self.params_initialized and not force_init:
            return
        assert self.binded, "call bind before initializing the parameters"
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        # NOTE: get_params merges dicts, so a shared name would silently hide one module's
        # values; refuse it here where the layer numbers are still known.
        owners: tuple = ({}, {})
        for i, module in enumerate(self._modules):
            for known, params in zip(owners, module.get_params()):
                for name in params:
                    if name in known:
                        raise MXNetError(
                            f"SequentialModule: duplicated parameter name {name!r} in layer {i} "
                            f"({type(module).__name__}), already used in layer {known[name]}")
                    known[name] = i
        self.params_initialized = True

    # -- binding and optimiser -------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write") -> None:
        """Bind each module on the previous one's output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MXNetError("SequentialModule.bind: inputs_need_grad needs for_training=True")
        if shared_module is not None:
            raise MXNetError("SequentialModule.bind: shared_module is not supported")
        if not self._modules:
            raise MXNetError("SequentialModule.bind: attempting to bind an empty SequentialModule")
        self.binded = True
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._label_shapes = label_shapes
        shapes = data_shapes
        any_labels = False
        for i, module in enumerate(self._modules):
            my_labels = label_shapes if self._takes_labels(i) else None
            any_labels = any_labels or self._takes_labels(i)
            if self._metas[i].get(self.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(shapes):
                    raise MXNetError(f"SequentialModule.bind: layer {i} wants {len(names)} data "
                                     f"inputs {names}, the previous layer gives {len(shapes)}")
                shapes = [(name, tuple(desc[1])) for name, desc in zip(names, shapes)]
            # later layers must hand input gradients back down the chain
            module.bind(data_shapes=shapes, label_shapes=my_labels, for_training=for_training,
                        inputs_need_grad=bool(inputs_need_grad or (for_training and i > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            shapes = module.output_shapes
        if not any_labels:
            self._label_shapes = None

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False) -> None:
        """Give every module the same optimizer settings."""
        self._check_ready("SequentialModule.init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    # -- computation -----------------------------------------------------------------------
    def forward(self, data_batch, is_train=None) -> None:
        """Run the chain; each module's outputs become the next module's ``data``."""
        self._check_ready("SequentialModule.forward")
        batch = copy.copy(data_batch)          # the caller's batch keeps its own data list
        for i, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            batch.data = module.get_outputs()
            if hasattr(batch, "provide_data"):
                names = [desc[0] for desc in module.output_shapes]
                batch.provide_data = [(n, x.shape) for n, x in zip(names, batch.data)]

    def backward(self, out_grads=None) -> None:
        """Backward from the last module to the first, chaining input gradients."""
        self._check_ready("SequentialModule.backward")
        for i in range(len(self._modules) - 1, -1, -1):
            self._modules[i].backward(out_grads=out_grads)
            if i > 0:
                out_grads = self._modules[i].get_input_grads()

    def update(self) -> None:
        """Every module applies its optimizer."""
        self._check_ready("SequentialModule.update")
        if not self.optimizer_initialized:
            raise MXNetError("SequentialModule.update: call init_optimizer() first")
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        self._check_ready("SequentialModule.get_outputs")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._check_ready("SequentialModule.get_input_grads")
        if not self.inputs_need_grad:
            raise MXNetError("SequentialModule.get_input_grads: bind with inputs_need_grad=True")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Every module that takes labels scores its own outputs against them."""
        self._check_ready("SequentialModule.update_metric")
        for i, module in enumerate(self._modules):
            if self._takes_labels(i):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon) -> None:
        assert self.binded, "SequentialModule.install_monitor: call bind() first"
        for module in self._modules:
            module.install_monitor(mon)

    def get_states(self, merge_multi_context=True):
        return self._modules[0].get_states(merge_multi_context)
