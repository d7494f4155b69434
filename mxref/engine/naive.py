"""NaiveEngine: runs every operation at push time, on the caller's thread. The reference semantics."""
from __future__ import annotations

import threading

from .base import Engine, FnProperty, OpError, RunContext, check_not_in_worker, dedup_vars, worker_state

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

    Errors follow the same data-flow rules as the threaded engine (stored on written variables,
    raised at the next wait), so a program behaves identically under both; only timing differs.
    Backtraces point at the real caller, which makes this the debugging mode
    (``MXNET_ENGINE_TYPE=NaiveEngine``).
    """

    name = "NaiveEngine"

    def __init__(self):
        self._errors = []           # errors not yet raised by wait_for_all, oldest first
        self._lock = threading.Lock()
        self._bulk_size = 0

    def new_variable(self):
        return NaiveVar()

    def push_async(self, fn, ctx, const_vars=(), mutable_vars=(), prop=FnProperty.NORMAL,
                   priority=0, name=None):
        const_vars, mutable_vars = dedup_vars(const_vars, mutable_vars)
        name = name or getattr(fn, "__name__", "op")
        inherited = None
        if prop not in (FnProperty.NO_SKIP, FnProperty.DELETE_VAR):
            for v in (*const_vars, *mutable_vars):
                if v.exception is not None:
                    inherited = v.exception
                    break
        error = inherited
        if inherited is None:
            done = []
            outer = getattr(worker_state, "op_name", None)
            worker_state.op_name = name
            try:
                fn(RunContext(ctx), lambda exc=None: done.append(exc))
            except BaseException as exc:  # noqa: BLE001 - stored and re-raised at the wait
                done.append(exc)
            finally:
                worker_state.op_name = outer
            if not done:
                # NOTE: an async function that completes later from another thread is not allowed
                # here; the naive engine is synchronous by definition.
                done.append(RuntimeError(f"operation {name} returned without calling on_complete"))
            if done[0] is not None:
                error = OpError(name, done[0])
                with self._lock:
                    self._errors.append(error)
        for v in mutable_vars:
            v.version += 1
            if error is not None:
                v.exception = error

    def push_sync(self, fn, ctx, const_vars=(), mutable_vars=(), prop=FnProperty.NORMAL,
                  priority=0, name=None):
        def run(rctx, on_complete):
            fn(rctx)
            on_complete()
        run.__name__ = name or getattr(fn, "__name__", "op")
        self.push_async(run, ctx, const_vars, mutable_vars, prop, priority, name)

    def delete_variable(self, delete_fn, ctx, var):
        def run(rctx):
            delete_fn(rctx)
            var.deleted = True
        self.push_sync(run, ctx, (), (var,), FnProperty.DELETE_VAR, 0, "DeleteVariable")

    def wait_for_var(self, var):
        check_not_in_worker("wait_for_var")
        err = var.exception
        if err is not None:
            var.exception = None
            with self._lock:
                if err in self._errors:
                    self._errors.remove(err)
            raise err.to_error()

    def wait_for_all(self):
        check_not_in_worker("wait_for_all")
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise errors[0].to_error()

    def set_bulk_size(self, size):
        # Bulking only saves scheduling work, and the naive engine schedules nothing.
        old, self._bulk_size = self._bulk_size, int(size)
        return old
