"""Bulk execution: consecutive small ``push_sync`` calls collected into one engine operation.

Pushing costs a few microseconds; an elementwise op on a small array costs about as much. With
``mx.engine.set_bulk_size(n)`` (thread-local, MXNet's ``BulkStatus``) the engine collects up to ``n``
consecutive ``push_sync`` calls that have ``prop == NORMAL``, ``priority == 0`` and the same
context, and pushes them as one operation named ``ImperativeBulk`` that reads the union of their
inputs and writes the union of their outputs. Results are the same as unbulked because the
functions run in push order on one thread, and the bulk as a whole is ordered against everyone
else by its variables.

The collection is flushed when it reaches ``n``, when the context changes, on any other push, on
``wait_for_var``/``wait_for_all``, and when the bulk size is set again.

NOTE: a failure inside a bulk fails the whole bulk: the remaining functions are skipped and every
variable the bulk writes carries the error, at every read, until overwritten (MXNet marks them too,
but its arrays read garbage once the error was thrown). The error names the inner op.
"""
from __future__ import annotations

import threading
from typing import Callable, List, Optional, Tuple

__all__ = ["BulkStatus", "BulkOp"]


class BulkOp:
    """The function of a flushed bulk: runs each collected function in order with ``is_bulk=True``."""

    __slots__ = ("fns", "names", "failed_name", "__name__")

    def __init__(self, fns: List[Callable], names: List[str]):
        self.fns = fns
        self.names = names
        self.failed_name: Optional[str] = None
        self.__name__ = "ImperativeBulk"

    def __call__(self, rctx) -> None:
        rctx.is_bulk = True
        done = 0
        try:
            for fn in self.fns:
                fn(rctx)
                done += 1
        except BaseException:
            self.failed_name = f"{self.names[done]} (in ImperativeBulk)"
            raise


class BulkStatus(threading.local):
    """One thread's bulk: the size limit and the functions collected so far."""

    def __init__(self):
        self.size = 0
        self.ctx = None
        self.fns: List[Callable] = []
        self.names: List[str] = []
        self.const: list = []
        self.mutable: list = []

    def add(self, fn: Callable, ctx, const_vars, mutable_vars, name: str) -> None:
        self.ctx = ctx
        self.fns.append(fn)
        self.names.append(name)
        self.const.extend(const_vars)
        self.mutable.extend(mutable_vars)

    def take(self) -> Tuple[BulkOp, object, list, list]:
        """Empty the collection; return ``(function, ctx, const_vars, mutable_vars)`` to push."""
        out = (BulkOp(self.fns, self.names), self.ctx, self.const, self.mutable)
        self.fns, self.names, self.const, self.mutable = [], [], [], []
        return out
