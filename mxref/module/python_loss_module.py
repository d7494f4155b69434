"""``PythonLossModule``: a loss written in Python as a gradient function of (scores, labels)."""
from __future__ import annotations

import logging

from .. import ndarray as nd
from ..base import MXNetError
from .python_module import PythonModule


class PythonLossModule(PythonModule):
    """The last link of a chain: forward passes the scores through unchanged (output
    ``<name>_output``), backward returns ``grad_func(scores, labels)`` as the input gradient.

    Example
    -------
    >>> loss = mx.mod.PythonLossModule(grad_func=lambda s, l: s - mx.nd.one_hot(l, 10))
    """

    def __init__(self, name="pyloss", data_names=("data",), label_names=("softmax_label",),
                 logger=logging, grad_func=None):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(self._data_names) != 1 or len(self._label_names) != 1:
            raise MXNetError("PythonLossModule: exactly one data and one label name, got "
                             f"{self._data_names} and {self._label_names}")
        if grad_func is not None and not callable(grad_func):
            raise MXNetError(f"PythonLossModule: grad_func must be callable, got {grad_func!r}")
        self._name = name
        self._grad_func = grad_func
        self._scores = self._labels = self._scores_grad = None

    def _compute_output_shapes(self):
        return [(self._name + "_output", tuple(self._data_shapes[0][1]))]

    def forward(self, data_batch, is_train=None) -> None:
        """Keep references to the scores (and, when training, the labels)."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        return [self._scores]

    def backward(self, out_grads=None) -> None:
        """``grad_func(scores, labels)``; a loss takes no ``out_grads``."""
        if out_grads is not None:
            raise MXNetError("PythonLossModule.backward: a loss module takes no out_grads")
        if not self.for_training:
            raise MXNetError("PythonLossModule.backward: bind with for_training=True")
        self._backward_impl()

    def _backward_impl(self) -> None:
        """Subclasses without ``grad_func`` write the gradient here."""
        if self._grad_func is None:
            raise NotImplementedError()
        grad = self._grad_func(self._scores, self._labels)
        self._scores_grad = grad if isinstance(grad, nd.NDArray) else nd.array(grad)

    def get_input_grads(self, merge_multi_context=True):
        return [self._scores_grad]

    def install_monitor(self, mon) -> None:
        raise NotImplementedError()
