"""``Updater``: the callable a KVStore (or ``Module``) calls as ``updater(index, grad, weight)``.

It creates each index's optimizer state on first use and keeps it; when the optimizer has an
``aggregate_num`` (SGD: ``MXNET_OPTIMIZER_AGGREGATION_SIZE``), it passes the optimizer lists of
up to that many same-dtype weights, which SGD updates with one fused operator per list.
``get_states`` / ``set_states`` write and read the states (optionally with the optimizer) for checkpoints in a
data-only format (``states_format.py``); MXNet's pickled ``.states`` load only on request.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from .. import ndarray as nd
from . import states_format
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
        if getattr(self.optimizer, "aggregate_num", 0) > 0:
            self._update_aggregated(indices, weights, grads)
        else:
            for idx, w, g in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(idx, w, g, self.states[idx])

    def _update_aggregated(self, indices, weights, grads) -> None:
        """Hand the optimizer lists of up to ``aggregate_num`` weights of one dtype at a time
        (MXNet's grouping: by dtype in order of first appearance, then in chunks), so an
        optimizer with a fused operator (SGD) makes one engine operation per chunk.

        NOTE: the groups are also split by context (MXNet splits by dtype only): with model
        parallelism (``group2ctxs``) one device's parameters live on several contexts, and one
        operator's inputs must share one."""
        by_dtype: Dict[Any, list] = {}
        for triple in zip(indices, weights, grads):
            by_dtype.setdefault((triple[1].dtype, triple[1].context), []).append(triple)
        size = self.optimizer.aggregate_num
        for triples in by_dtype.values():
            for lo in range(0, len(triples), size):
                idx, ws, gs = (list(t) for t in zip(*triples[lo:lo + size]))
                self.optimizer.update_multi_precision(idx, ws, gs, [self.states[i] for i in idx])

    def sync_state_context(self, state, context):
        """``state`` (an NDArray or nested tuple/list of them) moved to ``context``."""
        if isinstance(state, nd.NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states: bytes, allow_pickle: Optional[bool] = None,
                   source: str = "optimizer states") -> None:
        """Load states written by ``get_states`` (with the optimizer too, if it was dumped).

        Parameters
        ----------
        states : bytes
            What ``get_states`` returned (the contents of a ``.states`` file).
        allow_pickle : bool, optional
            Also accept a pickle (MXNet's ``.states`` files, mxref's older ones). Default: the
            ``MXREF_ALLOW_PICKLE`` environment variable, off unless set to 1.

            .. warning:: unpickling runs whatever code the data names; allow it only for files
               you trust. Without it, a pickle raises ``MXNetError`` and nothing is unpickled.
        source : str
            What ``states`` came from (a file name), for error messages.
        """
        loaded, optimizer = states_format.loads(states, source, allow_pickle)
        self.states = loaded
        if optimizer is not None:
            self.optimizer = optimizer
        # Loaded arrays live where they were saved from; move each on its next use.
        self.states_synced = dict.fromkeys(self.states, False)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states as bytes in the data-only format; ``dump_optimizer=True`` includes the
        optimizer (its class by registry name and its lr, counts, scheduler, ...)."""
        return states_format.dumps(self.states, self.optimizer if dump_optimizer else None)


def get_updater(optimizer: Optimizer) -> Updater:
    """An ``Updater`` for ``optimizer`` (what ``kvstore.set_optimizer`` installs)."""
    return Updater(optimizer)
