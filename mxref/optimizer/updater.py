"""``Updater``: the callable a KVStore (or ``Module``) calls as ``updater(index, grad, weight)``.

It creates each index's optimizer state on first use and keeps it; ``get_states`` /
``set_states`` pickle the states (optionally with the optimizer) for checkpoints, as MXNet does.
"""
from __future__ import annotations

import pickle
from typing import Any, Dict

from .. import ndarray as nd
from .optimizer import Optimizer

__all__ = ["Updater", "get_updater"]


class Updater:
    """Applies ``optimizer`` to ``(index, grad, weight)`` triples, holding one state per index.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose ``update_multi_precision`` is called.

    Examples
    --------
    >>> updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1))
    >>> updater(0, grad, weight)      # pushes the update; weight is written asynchronously
    """

    def __init__(self, optimizer: Optimizer):
        self.optimizer = optimizer
        self.states: Dict[Any, Any] = {}
        self.states_synced: Dict[Any, bool] = {}

    def __call__(self, index, grad, weight) -> None:
        """Update ``weight`` from ``grad``; lists of indices, grads and weights are accepted too."""
        if isinstance(index, (list, tuple)):
            indices, grads, weights = list(index), list(grad), list(weight)
        else:
            indices, grads, weights = [index], [grad], [weight]
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):   # keys from a C-style API arrive as bytes
                idx = indices[i] = idx.decode()
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx], weights[i].context)
                self.states_synced[idx] = True
        for idx, w, g in zip(indices, weights, grads):
            self.optimizer.update_multi_precision(idx, w, g, self.states[idx])

    def sync_state_context(self, state, context):
        """``state`` (an NDArray or nested tuple/list of them) moved to ``context``."""
        if isinstance(state, nd.NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states: bytes) -> None:
        """Load states written by ``get_states`` (with the optimizer too, if it was dumped)."""
        loaded = pickle.loads(states)
        if isinstance(loaded, tuple) and len(loaded) == 2:
            self.states, self.optimizer = loaded
        else:
            self.states = loaded
        # Loaded arrays live where they were pickled from; move each on its next use.
        self.states_synced = dict.fromkeys(self.states, False)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states pickled; ``dump_optimizer=True`` includes the optimizer (lr, counts, ...)."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer: Optimizer) -> Updater:
    """An ``Updater`` for ``optimizer`` (what ``kvstore.set_optimizer`` installs)."""
    return Updater(optimizer)
