"""``Concurrent``, ``HybridConcurrent`` and ``Identity``: run children side by side and join their outputs.

A ``HybridConcurrent(axis=1)`` whose children are ``Identity()`` and a conv stack is DenseNet's
layer (the input concatenated with the new features); with several conv branches it is an
Inception module. The children get the same input; their outputs are concatenated along ``axis``.
"""
from __future__ import annotations

from .... import ndarray
from ... import nn
from ...block import HybridBlock


class Concurrent(nn.Sequential):
    """Feed the input to every child (Blocks) and concatenate the outputs along ``axis``."""

    def __init__(self, axis: int = -1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return ndarray.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(nn.HybridSequential):
    """``Concurrent`` for HybridBlocks, so the whole join hybridizes into one graph."""

    def __init__(self, axis: int = -1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Return the input unchanged (the shortcut branch of a ``HybridConcurrent``)."""

    def hybrid_forward(self, F, x):
        return x
