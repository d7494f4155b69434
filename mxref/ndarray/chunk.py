"""Chunk: the memory behind one or more NDArrays, with the engine variable that orders its uses."""
from __future__ import annotations

import threading

from .. import engine as _engine
from .. import storage as _storage

__all__ = ["Chunk"]

# Allocation is rare (once per chunk), so one lock for all chunks is cheap and keeps two workers
# that touch a fresh chunk at the same time from allocating it twice.
_alloc_lock = threading.Lock()


def _free_nothing(run_ctx) -> None:
    """Delete function of a chunk that was never written: there is no memory to return."""


class Chunk:
    """``nbytes`` of storage on ``ctx``, allocated on first use, and the engine variable ``var``.

    NDArrays that view the same memory (reshapes, axis-0 slices) share one ``Chunk`` and hence one
    variable, so the engine orders a write through a view with every use of the base array.

    Memory is allocated by :meth:`data` the first time anyone needs it; for results of operators
    that is inside the pushed function, on the engine worker, in dependency order (MXNet's
    ``delay_alloc``). When the last reference goes away the chunk asks the engine to delete its
    variable; the free runs after every operation already pushed on the variable.
    """

    __slots__ = ("var", "ctx", "nbytes", "handle", "engine", "__weakref__")

    def __init__(self, nbytes: int, ctx, var, handle=None):
        self.var = var
        self.ctx = ctx
        self.nbytes = nbytes
        self.handle = handle
        self.engine = _engine._engine   # the engine that made ``var`` (checked at deletion)

    def data(self):
        """The chunk's bytes (a 1-D ``uint8`` numpy array), allocating them on first use."""
        handle = self.handle
        if handle is None:
            with _alloc_lock:
                handle = self.handle
                if handle is None:
                    handle = self.handle = _storage.alloc(self.nbytes, self.ctx)
        return handle.buffer

    @property
    def allocated(self) -> bool:
        return self.handle is not None

    def __del__(self):
        # NOTE: this may run on any thread (often an engine worker dropping a finished op's
        # closure) and during interpreter shutdown, when modules are half torn down; a failure
        # here must never propagate, at worst the memory is reclaimed by the garbage collector.
        try:
            handle = self.handle
            eng = _engine._engine
            if handle is not None and handle._pool is None:
                handle = None   # foreign memory (from_numpy, from_dlpack): its owner frees it
            if eng is not self.engine or eng is None:
                # The engine was switched (and drained) since this chunk was made: its variable
                # means nothing to the new one, and nothing can still be queued on the memory.
                if handle is not None:
                    _storage.free(handle)
                return
            eng.delete_storage(handle, self.ctx, self.var)
        except Exception:  # noqa: BLE001
            pass
