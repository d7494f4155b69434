"""The engine's core in pure Python: per-variable dependency queues, op blocks and blocking work queues.

This is the specification; ``mxref/_ext/engine_core.pyx`` is its Cython twin with the same names and
behavior (``tests/engine/test_var_queue.py`` replays random sequences on both and compares traces).

A variable keeps a FIFO of the operations waiting for it (MXNet's ``ThreadedVar``)::

    head ─► sentinel            pending_write ─► oldest write not yet complete (or None)
    num_pending_reads: reads now running, or WRITE_TRIGGERED once the pending write is released

Reads between two writes run concurrently; writes are exclusive and run in push order. An operation
waits on a counter of ``reads + writes + 1``; every variable that lets it go decrements the counter
and the one that reaches zero dispatches it. The ``+1`` is released only after the operation has
been appended to all its variables, so a fast completion elsewhere cannot dispatch it half-registered.

Deleting a variable is not an operation: ``retire(var, token)`` answers ``True`` when nothing is
queued on the variable (the caller deletes it at once), else it parks ``token`` on the variable and
the ``complete`` call that empties the queue returns it among the released operations.
"""
from __future__ import annotations

import collections
import heapq
import itertools
import queue
import threading
from typing import List, Optional, Sequence

from ..base import MXNetError
from .base import dedup_vars

__all__ = ["WRITE_TRIGGERED", "OprBlock", "ThreadedVar", "register", "complete", "retire", "idle",
           "IdleRunner", "FIFOQueue", "PriorityQueue", "PendingCounter", "IMPLEMENTATION"]

IMPLEMENTATION = "python"
WRITE_TRIGGERED = -1

# One lock for every op's wait counter: decrements come from several threads at once (one per
# variable completing), each is a few instructions, so a shared lock is cheaper than one per op.
_WAIT_LOCK = threading.Lock()


class OprBlock:
    """One pushed operation: the function, its deduplicated variables, routing and its wait counter.

    ``sync`` functions take ``(run_ctx)``; async ones take ``(run_ctx, on_complete)``, and the block
    itself is the ``on_complete`` callable (it forwards to ``callback(block, exc)``).
    """

    __slots__ = ("fn", "ctx", "const_vars", "mutable_vars", "prop", "priority", "name", "sync",
                 "wait", "error", "callback", "done", "flags", "epoch", "reads")

    def __init__(self, fn, ctx, const_vars: Sequence = (), mutable_vars: Sequence = (), prop: int = 0,
                 priority: int = 0, name: str = "op", sync: bool = True, flags: int = 0):
        every = (*const_vars, *mutable_vars)
        # Every variable the op reads, in push order, when dedup dropped a read of a written one
        # (``a += 1``); None when ``const_vars`` are all its reads. Errors are judged by reads.
        self.reads = None
        if len(every) == 2:        # the usual op: one read, one write, or two of either
            if every[0] is every[1]:
                reads = tuple(const_vars)
                const_vars, mutable_vars = dedup_vars(const_vars, mutable_vars)
                every = (*const_vars, *mutable_vars)
                if len(const_vars) != len(reads):
                    self.reads = reads
        elif len(every) > 2 and len(set(every)) != len(every):
            reads = tuple(const_vars)
            const_vars, mutable_vars = dedup_vars(const_vars, mutable_vars)
            every = (*const_vars, *mutable_vars)
            if len(const_vars) != len(reads):
                self.reads = reads
        self.const_vars = tuple(const_vars)
        self.mutable_vars = tuple(mutable_vars)
        for v in every:
            if type(v) is not ThreadedVar:
                raise MXNetError(f"operator {name}: {v!r} is not a variable of the threaded engine "
                                 "(create variables with engine.new_variable())")
        self.fn = fn
        self.ctx = ctx
        self.prop = int(prop)
        self.priority = int(priority)
        self.name = name
        self.sync = sync
        self.flags = flags          # engine-private bits (e.g. "run inline when ready")
        self.wait = len(self.const_vars) + len(self.mutable_vars) + 1
        self.error = None
        self.callback = None
        self.done = False
        self.epoch = 0              # the engine's cancellation epoch at push (see ErrorBook)

    def decr_wait(self, n: int = 1) -> bool:
        """Release ``n`` dependencies; ``True`` for exactly the call that brings the count to zero."""
        with _WAIT_LOCK:
            self.wait -= n
            return self.wait == 0

    def __call__(self, exc=None):
        self.callback(self, exc)

    def __repr__(self):
        return f"OprBlock({self.name}, wait={self.wait})"


class _VarBlock:
    """One entry of a variable's FIFO: the op it triggers and whether that op writes."""

    __slots__ = ("next", "trigger", "write")

    def __init__(self):
        self.next = None
        self.trigger = None
        self.write = False


class ThreadedVar:
    """An engine variable with its dependency queue (MXNet's ``ThreadedVar``).

    ``version`` counts completed writes; ``exception`` is the error of the last failed writer;
    ``_retired`` holds the tokens of ``retire`` calls waiting for the queue to empty.
    """

    __slots__ = ("_lock", "_head", "_pending_write", "_num_pending_reads", "version", "exception",
                 "deleted", "_retired", "__weakref__")

    def __init__(self):
        self._lock = threading.Lock()
        self._head = _VarBlock()              # the empty sentinel at the tail of the FIFO
        self._pending_write = None
        self._num_pending_reads = 0
        self.version = 0
        self.exception = None
        self.deleted = False
        self._retired = None

    def ready_to_read(self) -> bool:
        """No write is queued or running: a read pushed now would run at once."""
        return self._pending_write is None

    def append_read(self, opr) -> bool:
        """Queue a read; ``True`` when it may run now (no write ahead of it)."""
        with self._lock:
            if self._pending_write is None:
                self._num_pending_reads += 1
                return True
            # NOTE: allocating inside the lock is safe only because a GC finalizer that pushes
            # work (an NDArray freeing its memory) never targets a variable still in use here.
            self._head.trigger = opr
            self._head.next = nxt = _VarBlock()
            self._head = nxt
            return False

    def append_write(self, opr) -> bool:
        """Queue a write; ``True`` when it may run now (nothing ahead of it)."""
        with self._lock:
            blk = self._head
            blk.trigger = opr
            blk.write = True
            blk.next = self._head = _VarBlock()
            if self._pending_write is None:
                self._pending_write = blk
                if self._num_pending_reads == 0:
                    self._num_pending_reads = WRITE_TRIGGERED
                    return True
            return False

    def complete_read(self) -> Optional[OprBlock]:
        """A read finished; return the write it releases (the last reader lets the writer go)."""
        with self._lock:
            self._num_pending_reads -= 1
            if self._num_pending_reads == 0 and self._pending_write is not None:
                self._num_pending_reads = WRITE_TRIGGERED
                return self._pending_write.trigger
            return None

    def complete_write(self) -> List[OprBlock]:
        """The pending write finished; return what it releases: the reads queued right behind it,
        or the next write when no read is between them."""
        with self._lock:
            self.version += 1
            blk = self._pending_write.next
            released = []
            while blk is not self._head and not blk.write:
                released.append(blk.trigger)
                blk = blk.next
            self._num_pending_reads = len(released)
            if blk is self._head:
                self._pending_write = None
            else:
                self._pending_write = blk
                if not released:
                    self._num_pending_reads = WRITE_TRIGGERED
                    released.append(blk.trigger)
            return released

    def __repr__(self):
        return f"ThreadedVar(version={self.version})"


def register(opr: OprBlock) -> bool:
    """Append ``opr`` to all its variables; ``True`` when it is ready to run right away."""
    ready = 1                                   # the +1 guard, released last
    for v in opr.const_vars:
        ready += v.append_read(opr)
    for v in opr.mutable_vars:
        ready += v.append_write(opr)
    return opr.decr_wait(ready)


def complete(opr: OprBlock) -> list:
    """Mark ``opr`` complete on all its variables; return the ops that became ready to run, and the
    ``retire`` tokens of the variables whose queue it emptied.

    A failed op's error is stored on every variable it writes before the next user is released.
    """
    ready = []
    for v in opr.const_vars:
        nxt = v.complete_read()
        if nxt is not None and nxt.decr_wait():
            ready.append(nxt)
        if v._retired is not None:
            _take_retired(v, ready)
    error = opr.error
    for v in opr.mutable_vars:
        if error is not None:
            v.exception = error
        for nxt in v.complete_write():
            if nxt.decr_wait():
                ready.append(nxt)
        if v._retired is not None:
            _take_retired(v, ready)
    return ready


def retire(var: ThreadedVar, token) -> bool:
    """Ask to delete ``var`` after every operation queued on it: ``True`` when none is (the caller
    deletes it now); else ``token`` is returned by the ``complete`` that empties its queue."""
    if type(var) is not ThreadedVar:
        raise MXNetError(f"DeleteVariable: {var!r} is not a variable of the threaded engine "
                         "(create variables with engine.new_variable())")
    with var._lock:
        if var._pending_write is None and var._num_pending_reads == 0:
            return True
        if var._retired is None:
            var._retired = []
        var._retired.append(token)
        return False


def _take_retired(v: ThreadedVar, out: list) -> None:
    """Move ``v``'s parked ``retire`` tokens to ``out`` if nothing is queued on it any more."""
    with v._lock:
        if v._retired is not None and v._pending_write is None and v._num_pending_reads == 0:
            out.extend(v._retired)
            v._retired = None


def idle(var: ThreadedVar) -> bool:
    """Nothing is queued on or running against ``var`` (a delete of it may run at once)."""
    return var._pending_write is None and var._num_pending_reads == 0


_IDLE_MAX_VARS = 8          # more variables: the ordinary push handles them


class IdleRunner:
    """Runs an eligible op on the calling thread when the whole engine is idle, in one call.

    ``ThreadedEnginePerDevice.push_sync`` asks it first. On an idle engine the state after push +
    run + complete equals the state before (every queue empty, ``pending`` 0) but for the written
    variables' versions, so no op block is made and no worker queue, error check or completion
    dispatch is touched. See docs/architecture/engine.md, "The idle run". ``run`` answers ``False``
    (nothing done) whenever the ordinary path is needed.
    """

    __slots__ = ("engine", "pending", "errors", "prof", "wstate", "run_context", "inline_users",
                 "last_ctx", "last_rctx", "enabled", "runs", "slow_push")

    def __init__(self, engine, pending: "PendingCounter", errors, prof_state, wstate, run_context,
                 inline_users, enabled: bool):
        self.engine = engine
        self.slow_push = type(engine).push_sync
        self.inline_users = inline_users
        self.pending = pending
        self.errors = errors
        self.prof = prof_state
        self.wstate = wstate
        self.run_context = run_context
        self.enabled = bool(enabled)
        self.runs = 0               # ops run this way (tests and benchmarks read it)
        self.last_ctx = self.last_rctx = None

    def run(self, fn, ctx, const_vars, mutable_vars, prop: int = 0, name=None) -> bool:
        """Run ``fn`` now if the engine is idle and the op may run inline; ``True`` when done."""
        if not self.enabled or prop != 0 or self.pending.value != 0:
            return False
        reads, writes = tuple(const_vars), tuple(mutable_vars)
        if len(reads) > _IDLE_MAX_VARS or len(writes) > _IDLE_MAX_VARS:
            return False
        if self.engine._bulkers or self.inline_users.count:     # push_sync's business
            return False
        if self.prof.recording or self.errors.tainted or not getattr(fn, "may_run_inline", False):
            return False
        if ctx is not None and ctx.device_typeid == 2:      # gpu: kernels are asynchronous there
            return False
        if name is None:
            name = getattr(fn, "__name__", "op")
        rctx = self.last_rctx
        if ctx is not self.last_ctx:
            rctx = self.run_context(ctx, False, None)
            self.last_ctx, self.last_rctx = ctx, rctx
        for v in (*writes, *reads):
            if type(v) is not ThreadedVar:
                return False
        if len(set(writes)) != len(writes):
            return False
        own = []            # each distinct read not also written, as OprBlock keeps them
        for v in reads:
            if v not in writes and v not in own:
                own.append(v)
        # NOTE: a push takes the pending counter's lock before it registers anywhere, so holding it
        # from the idle test to the end of our registration makes the two one step, as the GIL
        # does for the Cython twin.
        with self.pending._lock:
            if self.pending.value != 0:
                return False
            for v in (*writes, *own):
                if not (v._pending_write is None and v._num_pending_reads == 0):
                    return False
            for v in writes:
                v.append_write(None)      # no op block stands behind it
            for v in own:
                v.append_read(None)
            self.pending.value = 1
        wstate = self.wstate
        outer = getattr(wstate, "op_name", None)
        wstate.op_name = name
        exc = None
        try:
            fn(rctx)
        except BaseException as e:  # noqa: BLE001 - stored on the outputs, raised at a wait
            exc = e
        wstate.op_name = outer
        if exc is not None:
            # The rare case: the engine's own completion stores the error with every rule.
            self.engine._idle_failed(fn, ctx, tuple(own), writes, name, exc)
            return True
        ready = []
        for v in own:
            nxt = v.complete_read()
            if nxt is not None and nxt.decr_wait():
                ready.append(nxt)
            if v._retired is not None:
                _take_retired(v, ready)
        for v in writes:
            for nxt in v.complete_write():
                if nxt.decr_wait():
                    ready.append(nxt)
            if v._retired is not None:
                _take_retired(v, ready)
        self.runs += 1
        if ready:                          # something was pushed on these variables meanwhile
            self.engine._idle_finish(ready)
            return True
        left = self.pending.dec()
        if self.engine._sleepers:          # read after the count drops (see _complete)
            self.engine._idle_wake(left)
        return True

    def push_sync(self, fn, ctx, const_vars=(), mutable_vars=(), prop=0, priority=0, name=None):
        """The engine's ``push_sync``: the idle run when ``run`` takes the op, else the class's
        ``push_sync`` (the ordinary path)."""
        if not self.run(fn, ctx, const_vars, mutable_vars, prop, name):
            self.slow_push(self.engine, fn, ctx, const_vars, mutable_vars, prop, priority, name)

    def delete_storage(self, handle, ctx, var) -> None:
        """``Engine.delete_storage`` in one call when ``var`` is idle: the pool takes ``handle``
        back (``None``: nothing to give) and ``var`` is retired, as ``free_now`` does; any other
        case goes to the engine's ``_delete_storage``.

        NOTE: an idle variable of a dropped chunk stays idle: nothing can push on it any more.
        """
        if (self.engine._bulkers or self.prof.recording or type(var) is not ThreadedVar
                or not idle(var)):
            self.engine._delete_storage(handle, ctx, var)
            return
        if handle is not None:
            pool = handle._pool
            give = getattr(pool, "_give_back", None)
            if give is None or not give(pool, handle):
                self.engine._delete_storage(handle, ctx, var)
                return
        var.deleted = True
        if var.exception is not None:
            self.errors.mark((var,), None)
        var.version += 1


class FIFOQueue:
    """A blocking FIFO; ``push_front`` lets ``DELETE_VAR`` ops jump the line.

    Items live in a deque; a ``SimpleQueue`` of tokens does the blocking, one token per item, so a
    consumer that got a token is sure to find an item.
    """

    def __init__(self):
        self._items = collections.deque()
        self._tokens = queue.SimpleQueue()

    def push(self, item, priority: int = 0) -> None:
        self._items.append(item)
        self._tokens.put(None)

    def push_front(self, item, priority: int = 0) -> None:
        self._items.appendleft(item)
        self._tokens.put(None)

    def pop(self):
        """Block until an item is available and return it."""
        self._tokens.get()
        return self._items.popleft()

    def __len__(self):
        return len(self._items)


class PriorityQueue:
    """A blocking max-priority queue (higher pops first; equal priorities in push order)."""

    def __init__(self):
        self._heap = []
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._tokens = queue.SimpleQueue()

    def push(self, item, priority: int = 0) -> None:
        with self._lock:
            heapq.heappush(self._heap, (-priority, next(self._seq), item))
        self._tokens.put(None)

    def push_front(self, item, priority: int = 0) -> None:
        # As dmlc's ConcurrentBlockingQueue: in a priority queue the priority alone decides.
        self.push(item, priority)

    def pop(self):
        self._tokens.get()
        with self._lock:
            return heapq.heappop(self._heap)[2]

    def __len__(self):
        return len(self._heap)


class PendingCounter:
    """The number of pushed and not yet completed operations."""

    __slots__ = ("value", "_lock")

    def __init__(self):
        self.value = 0
        self._lock = threading.Lock()

    def inc(self) -> int:
        with self._lock:
            self.value += 1
            return self.value

    def dec(self) -> int:
        with self._lock:
            self.value -= 1
            return self.value
