"""``PythonModule``: a module whose computation is plain Python, with no parameters of its own."""
from __future__ import annotations

import logging

from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule


class PythonModule(BaseModule):
    """A parameter-free module: binding checks names and asks ``_compute_output_shapes``;
    parameter, optimizer and update steps do nothing. Subclasses write ``forward``,
    ``backward``, ``get_outputs``, ``get_input_grads`` and ``_compute_output_shapes``.

    Parameters
    ----------
    data_names, label_names, output_names : list of str
    """

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        self._data_names = list(data_names)
        self._label_names = list(label_names) if label_names is not None else None
        self._output_names = list(output_names)
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    @property
    def data_names(self):
        return self._data_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        return self._data_shapes

    @property
    def label_shapes(self):
        return self._label_shapes

    @property
    def output_shapes(self):
        return self._output_shapes

    def get_params(self):
        """No parameters: ``({}, {})``."""
        return {}, {}

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False) -> None:
        """Nothing to initialise; the module counts as initialised."""
        self.params_initialized = True

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False) -> None:
        """Nothing to optimise."""
        self.optimizer_initialized = True

    def update(self) -> None:
        """Nothing to update."""

    def update_metric(self, eval_metric, labels, pre_sliced=False) -> None:
        """Score ``get_outputs()`` against ``labels`` (skipped when bound without labels)."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise MXNetError("PythonModule does not support presliced labels")
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write") -> None:
        """Check the names against ``data_names``/``label_names`` and compute output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise MXNetError(f"PythonModule.bind: only grad_req='write' is supported, got {grad_req!r}")
        names = [desc[0] for desc in data_shapes]
        if names != self._data_names:
            raise MXNetError(f"PythonModule.bind: data_shapes name {names}, "
                             f"the module expects {self._data_names}")
        if label_shapes is not None:
            names = [desc[0] for desc in label_shapes]
            if self._label_names is None or names != self._label_names:
                raise MXNetError(f"PythonModule.bind: label_shapes name {names}, "
                                 f"the module expects {self._label_names}")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        """``[(name, shape), ...]`` of the outputs, from ``self._data_shapes``."""
        raise NotImplementedError()
