"""Checkpoints of models built from cells: weights are saved unpacked (per gate) and loaded packed."""
from __future__ import annotations

import warnings

from ..model import load_checkpoint, save_checkpoint
from .base_cell import BaseRNNCell

__all__ = ["rnn_unroll", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]


def rnn_unroll(cell, length, inputs=None, begin_state=None, input_prefix="", layout="NTC"):
    """Deprecated: ``cell.unroll(length, inputs, begin_state, layout=layout)``.

    ``input_prefix`` is ignored (MXNet passes it on to ``unroll``, which has no such argument).
    """
    warnings.warn("rnn_unroll is deprecated. Please call cell.unroll directly.", stacklevel=2)
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def _as_cells(cells):
    return [cells] if isinstance(cells, BaseRNNCell) else cells


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """``model.save_checkpoint`` after ``cell.unpack_weights`` of every cell in ``cells``
    (one cell or a list), so the file holds readable per-gate arrays.

    Writes ``prefix-symbol.json`` and ``prefix-%04d.params % epoch``.
    """
    for cell in _as_cells(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """``model.load_checkpoint`` then ``cell.pack_weights`` of every cell: ``(symbol, arg, aux)``
    ready for the graph the cells build."""
    sym, arg, aux = load_checkpoint(prefix, epoch)
    for cell in _as_cells(cells):
        arg = cell.pack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells, prefix, period=1):
    """An epoch-end callback for ``fit`` that runs ``save_rnn_checkpoint`` every ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
