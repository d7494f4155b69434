"""NaiveEngine: runs every operation at push time, on the caller's thread. The reference semantics."""
from __future__ import annotations

from .base import (
    SKIP_EXEMPT,
    Engine,
    ErrorBook,
    FnProperty,
    OpError,
    RunContext,
    check_not_in_worker,
    dedup_vars,
    free_now,
    run_delete,
    worker_state,
)

__all__ = ["NaiveVar", "NaiveEngine"]


class NaiveVar:
    """A variable of the naive engine: a write counter and the error of the last failed writer."""

    __slots__ = ("version", "exception", "deleted", "__weakref__")

    def __init__(self):
        self.version = 0
        self.exception = None
        self.deleted = False


class NaiveEngine(Engine):
    """Synchronous engine: ``push`` runs the function before returning.

    Errors follow the same data-flow rules as the threaded engine (``ErrorBook``: stored on
    written variables, raised at the next wait), so a program behaves identically under both;
    only timing differs. Backtraces point at the real caller, which makes this the debugging mode
    (``MXNET_ENGINE_TYPE=NaiveEngine``).
    """

    name = "NaiveEngine"
    completes_later = False      # every operation is done when its push returns

    def __init__(self):
        self.errors = ErrorBook()
        self._bulk_size = 0

    def new_variable(self):
        return NaiveVar()

    def push_async(self, fn, ctx, const_vars=(), mutable_vars=(), prop=FnProperty.NORMAL,
                   priority=0, name=None):
        self._run(fn, False, ctx, const_vars, mutable_vars, prop, name)

    def push_sync(self, fn, ctx, const_vars=(), mutable_vars=(), prop=FnProperty.NORMAL,
                  priority=0, name=None):
        self._run(fn, True, ctx, const_vars, mutable_vars, prop, name)

    def _run(self, fn, sync, ctx, const_vars, mutable_vars, prop, name):
        reads = const_vars              # before dedup: ``a += 1`` reads a, though a is written
        const_vars, mutable_vars = dedup_vars(const_vars, mutable_vars)
        name = name or getattr(fn, "__name__", "op")
        errors = self.errors
        error = None
        if errors.tainted and prop not in SKIP_EXEMPT:
            error = errors.inherited(reads)
        if error is None:
            exc = _call(fn, sync, RunContext(ctx), name)
            if exc is not None:
                error = OpError(name, exc)
                if isinstance(exc, KeyboardInterrupt):
                    # Ctrl-C inside the op: its outputs are failed and the interrupt goes on now,
                    # not as an op error at some later wait (nothing else is queued to cancel).
                    errors.mark(mutable_vars, error)
                    for v in mutable_vars:
                        v.version += 1
                    raise exc
                errors.record(error)
        if error is not None or errors.tainted:
            errors.mark(mutable_vars, error)
        for v in mutable_vars:
            v.version += 1

    def delete_variable(self, delete_fn, ctx, var):
        # Everything pushed on var already ran: delete it now, as a DELETE_VAR op would.
        run_delete(self.errors, delete_fn, ctx, var)

    def delete_storage(self, handle, ctx, var):
        free_now(self.errors, handle, var)      # everything pushed on var already ran

    def wait_for_var(self, var):
        check_not_in_worker("wait_for_var")
        self.errors.raise_for_var(var)

    def wait_for_all(self):
        check_not_in_worker("wait_for_all")
        self.errors.raise_all()

    def set_bulk_size(self, size):
        # Bulking only saves scheduling work, and the naive engine schedules nothing.
        old, self._bulk_size = self._bulk_size, int(size)
        return old


def _call(fn, sync, rctx, name):
    """Run one pushed function now; return the exception it raised or reported, else ``None``."""
    done = []
    outer = getattr(worker_state, "op_name", None)
    worker_state.op_name = name
    try:
        if sync:
            fn(rctx)
            done.append(None)
        else:
            fn(rctx, lambda exc=None: done.append(exc))
    except BaseException as exc:  # noqa: BLE001 - stored and re-raised at the wait
        done.append(exc)
    finally:
        worker_state.op_name = outer
    if not done:
        # NOTE: an async function that completes later from another thread is not allowed here;
        # the naive engine is synchronous by definition.
        return RuntimeError(f"operation {name} returned without calling on_complete")
    return done[0]
