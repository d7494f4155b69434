"""The engine interface (MXNet's ``Engine``): variables, pushed operations, waits and errors."""
from __future__ import annotations

import contextlib
import enum
import threading
import traceback
from typing import Callable, Optional, Sequence

from .._ext import loader as _loader
from ..base import MXNetError

__all__ = ["FnProperty", "RunContext", "Engine", "OpError", "ErrorBook", "worker_state",
           "check_not_in_worker", "dedup_vars", "SKIP_EXEMPT", "inline_scope", "in_inline_scope",
           "run_delete"]


class FnProperty(enum.IntEnum):
    """Routing hints for pushed functions (MXNet's ``FnProperty``)."""

    NORMAL = 0
    COPY_FROM_GPU = 1
    COPY_TO_GPU = 2
    CPU_PRIORITIZED = 3   # kvstore / copy work: goes to the priority queue
    ASYNC = 4             # completes from another thread (e.g. a network reply)
    DELETE_VAR = 5        # frees a variable; jumps the FIFO queues
    GPU_PRIORITIZED = 6
    NO_SKIP = 7           # runs even when an input carries an exception


class RunContext:
    """What a running function learns about where it runs (MXNet's ``RunContext``)."""

    __slots__ = ("ctx", "is_bulk", "stream")

    def __init__(self, ctx, is_bulk: bool = False, stream=None):
        self.ctx = ctx
        self.is_bulk = is_bulk
        self.stream = stream


class OpError:
    """An exception raised by a pushed operation, kept with the op name and original traceback.

    It travels along the data flow: it is stored on every variable the failing op writes, and
    ops that read such a variable are skipped and store it on what they write. It *sticks*: a
    variable keeps it, and every wait on the variable raises it, until an op that does not read
    the variable overwrites it. ``reported`` says whether some wait raised it already, so
    ``wait_for_all`` reports each error once (see ``ErrorBook``).
    """

    __slots__ = ("op_name", "exc", "tb_text", "reported")

    def __init__(self, op_name: str, exc: BaseException):
        self.op_name = op_name
        self.exc = exc
        self.tb_text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.reported = False

    def summary(self) -> str:
        """One line: the op and the exception."""
        return f"operator {self.op_name} failed: {type(self.exc).__name__}: {self.exc}"

    def to_error(self) -> MXNetError:
        """Build the ``MXNetError`` raised at the wait (the original exception is its ``__cause__``)."""
        if isinstance(self.exc, MXNetError):
            msg = f"{self.exc} (in operator {self.op_name})"
        else:
            msg = self.summary()
        # An MXNetError that is also a built-in kind (MXNetIndexError) keeps its type, as MXNet's do.
        kind = type(self.exc) if isinstance(self.exc, MXNetError) and isinstance(
            self.exc, (IndexError, ValueError, TypeError)) else MXNetError
        err = kind(msg + "\n\nOriginal traceback (from the engine worker):\n" + self.tb_text)
        err.__cause__ = self.exc
        return err


def _new_worker_state():
    """The per-thread state below: ``mxref._ext.thread_state.WorkerState`` (C thread storage) when
    built and allowed, else a ``threading.local`` with the same two attributes (chosen once, at
    import: it is state, not a kernel, so ``reference_kernels()`` blocks leave it as it is)."""
    core = _loader.load("thread_state", "engine worker state")
    return threading.local() if core is None else core.WorkerState()


# NOTE: a blocking wait issued from inside a pushed function would wait for itself (the wait needs
# the very worker that is blocked), so every engine marks its worker threads and refuses such waits.
# ``op_name``: the op this thread runs now (``None`` outside one); ``inline``: inside inline_scope.
worker_state = _new_worker_state()


def check_not_in_worker(what: str) -> None:
    """Raise ``MXNetError`` when a blocking ``what`` is called from inside a running engine op."""
    if getattr(worker_state, "op_name", None) is not None:
        raise MXNetError(
            f"{what} called from inside engine operation '{worker_state.op_name}': a blocking wait on "
            "an engine worker thread would deadlock. Use the arrays passed to the function instead, "
            "or push a separate operation that depends on the data.")


class _InlineUsers:
    """How many threads are inside ``inline_scope`` now: while 0, pushes skip the thread-local check."""

    count = 0
    lock = threading.Lock()


@contextlib.contextmanager
def inline_scope():
    """Let Python code running inside an engine operation use NDArrays: pushes run inline, waits work.

    A custom operator's ``forward`` runs inside the Custom op, on an engine worker. The NDArray
    operations it issues, queued as usual, would need a worker, possibly the very one blocked
    running it: with one worker thread that is a deadlock. Inside this scope, every operation the
    thread pushes is dispatched as an inline op: it runs at once, on this thread, when its
    variables are ready (always, for the fresh arrays a custom operator is handed or creates), and
    waits are allowed, so ``asnumpy()`` works. Scopes nest; the thread's state is restored on exit.
    """
    prev_name = getattr(worker_state, "op_name", None)
    prev_inline = getattr(worker_state, "inline", False)
    with _InlineUsers.lock:
        _InlineUsers.count += 1
    worker_state.op_name, worker_state.inline = None, True
    try:
        yield
    finally:
        worker_state.op_name, worker_state.inline = prev_name, prev_inline
        with _InlineUsers.lock:
            _InlineUsers.count -= 1


def in_inline_scope() -> bool:
    """Whether this thread is inside ``inline_scope`` (cheap while no thread is)."""
    return _InlineUsers.count > 0 and getattr(worker_state, "inline", False)


def dedup_vars(const_vars: Sequence, mutable_vars: Sequence):
    """Remove duplicates, and drop from the read list any var that is also written.

    A var in both lists would wait on itself forever (MXNet's ``DeduplicateVarHandle``).
    """
    if len(const_vars) + len(mutable_vars) <= 8:
        # The usual imperative op (``a += 1`` reads and writes one var): identity scans of a few
        # items cost far less than the dicts and sets below. Variables compare by identity.
        mutable = []
        for v in mutable_vars:
            for m in mutable:
                if m is v:
                    break
            else:
                mutable.append(v)
        const = []
        for v in const_vars:
            for m in mutable:
                if m is v:
                    break
            else:
                for c in const:
                    if c is v:
                        break
                else:
                    const.append(v)
        return const, mutable
    mutable = list(dict.fromkeys(mutable_vars))
    mset = set(map(id, mutable))
    const = [v for v in dict.fromkeys(const_vars) if id(v) not in mset]
    return const, mutable


# Ops with these properties run even when a variable they touch carries an error.
SKIP_EXEMPT = frozenset((FnProperty.NO_SKIP, FnProperty.DELETE_VAR))


def run_delete(errors: "ErrorBook", delete_fn: Callable, ctx, var) -> None:
    """Run ``delete_fn`` of a variable nothing is queued on any more, then mark the variable deleted.

    This is what MXNet's ``DeleteVariable`` op does when it runs, without the op: it runs even if
    the variable carries an error (``DELETE_VAR`` is skip-exempt), counts as a write (``version``),
    and an exception it raises is stored on the variable and raised at the next wait.
    """
    outer = getattr(worker_state, "op_name", None)
    worker_state.op_name = "DeleteVariable"    # a blocking wait in here would deadlock: refuse it
    try:
        delete_fn(RunContext(ctx))
    except BaseException as exc:  # noqa: BLE001 - travels with the data, re-raised at a wait
        err = OpError("DeleteVariable", exc)
        errors.record(err)
        errors.mark((var,), err)
    else:
        var.deleted = True
        if var.exception is not None:
            errors.mark((var,), None)     # nothing can read it any more: stop counting it
    finally:
        worker_state.op_name = outer
    var.version += 1


def _free_nothing(run_ctx) -> None:
    """Delete function of a variable without memory (never written, or foreign memory)."""


def _free_fn(handle) -> Callable:
    """The delete function that gives ``handle`` back to its pool (``None``: nothing to give)."""
    if handle is None:
        return _free_nothing

    def free_fn(run_ctx, handle=handle):
        _storage_free(handle)
    return free_fn


_storage = None


def _storage_free(handle) -> None:
    global _storage
    if _storage is None:
        from .. import storage  # noqa: PLC0415 - storage imports the profiler, which imports the engine
        _storage = storage
    _storage.free(handle)


def free_now(errors: "ErrorBook", handle, var) -> None:
    """``run_delete`` of ``_free_fn(handle)`` for a variable nothing is queued on, without the
    function and the thread's op name: a pool free never waits, so there is no wait to refuse."""
    if handle is not None:
        try:
            _storage_free(handle)
        except BaseException as exc:  # noqa: BLE001 - travels with the data, as in run_delete
            err = OpError("DeleteVariable", exc)
            errors.record(err)
            errors.mark((var,), err)
            var.version += 1
            return
    var.deleted = True
    if var.exception is not None:
        errors.mark((var,), None)
    var.version += 1


class ErrorBook:
    """The error rules shared by every engine (MXNet's ``OnStart``/``OnComplete``/``Throw``, stricter).

    * ``inherited(reads)``: an op reading a variable that carries an error is skipped and
      inherits it. An op that only *writes* such a variable runs: it overwrites the bad value.
    * ``mark(vars, err)``: a completed op's written variables carry ``err`` (failed or skipped)
      or, when it succeeded, no error any more. ``tainted`` counts the variables that carry one,
      so while it is 0 the check before each op costs one test.
    * ``record(err)``: a new error joins ``live``, the errors no wait has raised yet.
    * ``raise_for_var(var)``: raise the variable's error, every time (it sticks).
    * ``raise_all()``: raise the oldest live error with every other live one attached (its
      ``errors`` list and one ``__notes__`` line each), then none is live; variables still carry
      theirs. The order is completion order, as MXNet: independent failures on two workers may
      record in either order.
    * ``cancel()``: a ``KeyboardInterrupt`` reached a wait; every op pushed before it that has not
      started yet is cancelled when it comes to run (``epoch``, see ``cancelled``).

    Errors follow program order, not timing: whether an op is skipped depends only on what the ops
    pushed before it on the same variables did, so the naive and threaded engines agree.
    """

    __slots__ = ("live", "tainted", "epoch", "_lock")

    def __init__(self):
        self.live = []                 # errors not yet raised by any wait, oldest first
        self.tainted = 0               # variables carrying an error (never undercounted)
        self.epoch = 0                 # number of cancellations so far; ops remember it at push
        self._lock = threading.Lock()

    @staticmethod
    def inherited(reads: Sequence) -> Optional[OpError]:
        """The error an op reading ``reads`` inherits: the first read variable's that has one."""
        for v in reads:
            err = v.exception
            if err is not None:
                return err
        return None

    def mark(self, mutable_vars: Sequence, err: Optional[OpError]) -> None:
        """Store ``err`` on each written variable (``None``: a successful write clears it)."""
        with self._lock:
            for v in mutable_vars:
                old = v.exception
                if err is not None:
                    self.tainted += old is None
                elif old is not None:
                    self.tainted -= 1
                v.exception = err

    def record(self, err: OpError) -> None:
        with self._lock:
            self.live.append(err)

    def raise_for_var(self, var) -> None:
        """``wait_for_var``'s ending: raise the variable's error if it carries one."""
        err = var.exception
        if err is None:
            return
        with self._lock:
            err.reported = True
            if err in self.live:
                self.live.remove(err)
        raise err.to_error()

    def raise_all(self) -> None:
        """``wait_for_all``'s ending: raise the oldest live error, the others attached."""
        with self._lock:
            errors, self.live = self.live, []
            for err in errors:
                err.reported = True
        if not errors:
            return
        first = errors[0].to_error()
        first.errors = [first] + [e.to_error() for e in errors[1:]]
        if len(errors) > 1:
            first.add_note(f"wait_for_all: {len(errors)} operations failed; this is the first. "
                           "The others (all in .errors):")
            for e in errors[1:]:
                first.add_note(f"  {e.summary()}")
        raise first

    def cancel(self) -> None:
        """Cancel every op pushed so far that has not started: it completes as ``cancelled``."""
        with self._lock:
            self.epoch += 1

    @staticmethod
    def cancelled(op_name: str) -> OpError:
        """The error a cancelled op leaves on the variables it writes."""
        return OpError(op_name, MXNetError(
            f"operator {op_name} was cancelled by KeyboardInterrupt: it was queued and had not "
            "started when a wait was interrupted"))


class Engine:
    """Schedules functions by the variables they read (``const_vars``) and write (``mutable_vars``).

    Reads between two writes of a variable may run concurrently; writes are exclusive and run in
    push order. Implementations: ``NaiveEngine`` (runs at push) and ``ThreadedEnginePerDevice``.
    """

    name = "Engine"
    #: Whether an operation pushed with ``push_async`` may complete after ``fn`` returned, from
    #: another thread, its worker going on meanwhile. False for ``NaiveEngine``, which runs each
    #: operation at push and has it complete before the push returns.
    completes_later: bool = True

    def new_variable(self):
        """A fresh variable: a tag that orders every operation touching the same data or resource."""
        raise NotImplementedError

    def push_async(self, fn: Callable, ctx, const_vars: Sequence = (), mutable_vars: Sequence = (),
                   prop: FnProperty = FnProperty.NORMAL, priority: int = 0,
                   name: Optional[str] = None) -> None:
        """Schedule ``fn(run_ctx, on_complete)``; ``fn`` must call ``on_complete(exc=None)`` once,
        possibly from another thread."""
        raise NotImplementedError

    def push_sync(self, fn: Callable, ctx, const_vars: Sequence = (), mutable_vars: Sequence = (),
                  prop: FnProperty = FnProperty.NORMAL, priority: int = 0,
                  name: Optional[str] = None) -> None:
        """Schedule ``fn(run_ctx)``; it is complete when it returns (or raises)."""
        raise NotImplementedError

    def push_external(self, start: Callable, ctx, const_vars: Sequence = (), mutable_vars: Sequence = (),
                      prop: FnProperty = FnProperty.NORMAL, priority: int = 0,
                      name: Optional[str] = None) -> None:
        """Schedule an operation whose work finishes outside the engine (a network reply, say).

        When the variables allow, the engine calls ``start(done)``; ``start`` hands the work on
        and returns, and the operation is complete when ``done(exc=None)`` is called, once, from
        any thread. Callers need not know the engine: one that ``completes_later`` frees its
        worker until ``done`` (no engine thread waits for the network); one that does not (the
        naive engine) waits inside the operation, so everything is still complete at push.

        Examples
        --------
        >>> eng.push_external(lambda done: comm.request(..., callback=lambda msg, err: done(err)),
        ...                   cpu(0), [], [buf_var], name="KVStoreDistPush")
        """
        if self.completes_later:
            def fn(run_ctx, on_complete):
                start(on_complete)
        else:
            def fn(run_ctx, on_complete):
                finished, box = threading.Event(), []

                def done(exc=None):
                    box.append(exc)
                    finished.set()
                start(done)
                finished.wait()
                on_complete(box[0])
        self.push_async(fn, ctx, const_vars, mutable_vars, prop, priority, name)

    def delete_variable(self, delete_fn: Callable, ctx, var) -> None:
        """Run ``delete_fn(run_ctx)`` after every operation already pushed on ``var``, then retire it."""
        raise NotImplementedError

    def delete_storage(self, handle, ctx, var) -> None:
        """Give ``handle``'s memory back to its pool (``None``: there is none) after every operation
        already pushed on ``var``, then retire ``var``: what a dropped array's ``Chunk`` asks for.

        The same as ``delete_variable`` with a function that frees ``handle``; engines that can
        tell the variable is idle free it at once, without that function (``free_now``).
        """
        self.delete_variable(_free_fn(handle), ctx, var)

    def wait_for_var(self, var) -> None:
        """Block until every write already pushed on ``var`` is done; raise its stored error, if any."""
        raise NotImplementedError

    def wait_for_all(self) -> None:
        """Block until every pushed operation is done; raise the first stored error, if any."""
        raise NotImplementedError

    def set_bulk_size(self, size: int) -> int:
        """Batch up to ``size`` consecutive ``push_sync`` calls into one operation; return the old size."""
        raise NotImplementedError

    def cancel(self) -> None:
        """Cancel every pushed operation that has not started: it completes without running and
        the variables it writes carry a "cancelled by KeyboardInterrupt" error. A
        ``KeyboardInterrupt`` at a blocking wait calls this before it propagates."""

    def stop(self) -> None:
        """Drain and shut the engine down (called at interpreter exit and when switching engines).

        Errors nobody waited for stay stored; they are not raised here.
        """

    def num_pending(self) -> int:
        """Operations pushed and not yet complete."""
        return 0

    def describe(self) -> dict:
        """What ``mxref.info()`` prints about this engine: its type and worker threads."""
        return {"type": self.name}
