"""ThreadedEnginePerDevice: worker threads per device run operations as soon as their variables allow.

How one operation travels (MXNet's ``threaded_engine.cc`` + ``threaded_engine_perdevice.cc``)::

    push ──► OprBlock(wait = reads + writes + 1) ──► register on each variable's FIFO ──► release +1
                                                       │ wait hits 0 (now or when a var lets it go)
    dispatch ──► worker queue of its device ──► worker thread runs fn ──► complete on each variable
                                                                           └─► dispatch what it frees

The dependency core (``OprBlock``, ``ThreadedVar``, queues) is ``mxref._ext.engine_core`` (Cython)
or its pure-Python twin ``mxref.engine.var_queue``; both behave identically.

Deleting a variable (every dropped NDArray does) is not pushed as an op: ``retire`` either finds
nothing queued on the variable and the delete function runs at once on the caller's thread, or
parks it on the variable, and the completion that empties the variable's queue runs it, on the
thread that completes, before that op stops counting as pending. Either way it runs after every
use already pushed, as MXNet's ``DeleteVariable`` op, without a queue round trip per array.

Running on the calling thread (``MXREF_ENGINE_RUN_INLINE``, default on): a pushed function that
declares ``may_run_inline = True`` (the imperative kernel call of ``mx.nd``, for ops touching at
most ``MXREF_ENGINE_INLINE_MAX_BYTES``) runs on the pushing thread when the push finds nothing
else pending in the whole engine (so none of its variables has queued or running work and no
worker is busy), as the naive engine would run it; otherwise it is queued as usual. See ``_push``
and docs/architecture/engine.md, "Running on the calling thread". The common case of that, no
variable carrying an error and no bulking, is the idle run: ``IdleRunner.push_sync`` (the engine's
``push_sync``) pushes, runs and completes the op in one call, without an op block; and
``IdleRunner.delete_storage`` frees a dropped array's memory at once when its variable is idle.

Worker groups, created on first use:

* ``cpu(i)``: a FIFO queue served by ``MXNET_CPU_WORKER_NTHREADS`` threads (default 1, see below);
  ``CPU_PRIORITIZED`` ops (kvstore, copies) go to one priority queue with
  ``MXNET_CPU_PRIORITY_NTHREADS`` threads (default 4).
* ``gpu(i)``: a FIFO queue with ``MXNET_GPU_WORKER_NTHREADS`` threads (default 2), a priority
  queue for copies with ``MXNET_GPU_COPY_NTHREADS`` threads (default 2), one for
  ``GPU_PRIORITIZED`` ops.

NOTE: the default is one CPU worker, as in MXNet. Two workers let two independent chains of big
numpy ops overlap (numpy releases the GIL inside BLAS and large ufuncs), but for small ops the
workers mostly fight over the GIL: ``c = a + b`` on 10 elements took 89 µs per op with two
workers and 49 µs with one (MXNet 1.9.1: 49 µs) on the 2-core reference machine. Set
``MXNET_CPU_WORKER_NTHREADS=2`` for graphs with independent heavy branches (``engine_demo`` does).
"""
from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from typing import Callable, Dict, Optional

from .. import profiler as _profiler
from .._ext import loader
from ..base import MXNetError, env_bool, env_int
from . import var_queue
from .base import (
    SKIP_EXEMPT,
    Engine,
    ErrorBook,
    FnProperty,
    OpError,
    RunContext,
    check_not_in_worker,
    free_now,
    in_inline_scope,
    run_delete,
    worker_state,
)
from .base import _InlineUsers as _inline_users
from .bulk_status import BulkStatus

__all__ = ["ThreadedEnginePerDevice", "set_gpu_thread_init"]

_GPU = 2                          # Context.device_typeid of gpu
_INLINE = 1                       # OprBlock.flags: run where it becomes ready (tiny internal ops)
_WAIT = 2                         # OprBlock.flags: a wait op; never skipped because of errors
_NORMAL = int(FnProperty.NORMAL)
_ASYNC = int(FnProperty.ASYNC)
_DELETE = int(FnProperty.DELETE_VAR)
_CPU_PRIO = int(FnProperty.CPU_PRIORITIZED)
_GPU_PRIO = int(FnProperty.GPU_PRIORITIZED)
_COPIES = (int(FnProperty.COPY_FROM_GPU), int(FnProperty.COPY_TO_GPU))
_SKIP_EXEMPT = frozenset(int(p) for p in SKIP_EXEMPT)
_prof = _profiler._state
_ENGINES: "weakref.WeakSet[ThreadedEnginePerDevice]" = weakref.WeakSet()
_gpu_thread_init: Optional[Callable] = None


def set_gpu_thread_init(fn: Optional[Callable]) -> None:
    """Install the GPU backend's per-thread setup: ``fn(device_id, thread_name)`` runs once on each
    GPU worker thread when it starts, and what it returns (a stream) reaches ops as
    ``run_ctx.stream``. Threads already running keep what they got."""
    global _gpu_thread_init
    _gpu_thread_init = fn


def _runtime_stream(gpu_id: int, thread_name: str):
    """The default GPU thread init: this worker's own stream from the GPU runtime (one stream per
    GPU worker thread; an emulated stream is this thread's order of execution)."""
    from .._ext.cuda import runtime  # noqa: PLC0415 - the GPU runtime loads on first GPU work
    return runtime.thread_stream(gpu_id, thread_name)


class _WorkerGroup:
    """One queue and the threads serving it; ``name`` labels the threads in profiles."""

    def __init__(self, engine, name: str, queue, nthreads: int, gpu_id: Optional[int] = None):
        self.name = name
        self.queue = queue
        self.threads = []
        for i in range(max(1, nthreads)):
            t = threading.Thread(target=engine._worker_loop, args=(queue, gpu_id),
                                 name=f"{name} {i}", daemon=True)
            self.threads.append(t)
            t.start()

    def stop(self) -> None:
        for _ in self.threads:
            self.queue.push(None, -(1 << 62))    # one stop token per thread, behind any work
        for t in self.threads:
            if t is not threading.current_thread():
                t.join()


def _call(blk, rctx):
    """Call ``blk``'s function as a worker does (``worker_state.op_name`` names it meanwhile) and
    return what it raised, or ``None``: an error travels with the data, re-raised at a wait."""
    outer = getattr(worker_state, "op_name", None)
    worker_state.op_name = blk.name
    try:
        if blk.sync:
            blk.fn(rctx)
        else:
            blk.fn(rctx, blk)          # the block is its own on_complete callback
    except BaseException as e:  # noqa: BLE001 - stored on the outputs by _complete
        return e
    finally:
        worker_state.op_name = outer
    return None


class ThreadedEnginePerDevice(Engine):
    """The default engine: dependency tracking per variable, worker threads per device.

    Parameters
    ----------
    use_ext : bool, optional
        ``True`` forces the Cython core, ``False`` the pure-Python twin; ``None`` follows the one
        switch (``MXREF_ENABLE_EXT=0`` or a ``mxref._ext.reference_kernels()`` block: pure
        Python) and ``MXREF_ENFORCE_EXT`` (see ``mxref._ext.switch`` and ``mxref._ext.loader``).
    cpu_worker_nthreads, cpu_priority_nthreads, gpu_worker_nthreads, gpu_copy_nthreads : int, optional
        Thread counts; default to the ``MXNET_*_NTHREADS`` environment variables.
    max_pending : int, optional
        Back-pressure bound (``MXREF_ENGINE_MAX_PENDING``, default 65536): a push that would exceed
        it blocks until operations complete. Pushes from worker threads never block (they could be
        the ones whose completion is awaited).
    run_inline : bool, optional
        Run an eligible op on the pushing thread when the engine is idle (see ``_push``); defaults
        to ``MXREF_ENGINE_RUN_INLINE`` (``1``). ``False`` hands every op to a worker.
    """

    name = "ThreadedEnginePerDevice"

    def __init__(self, use_ext: Optional[bool] = None, cpu_worker_nthreads: Optional[int] = None,
                 cpu_priority_nthreads: Optional[int] = None, gpu_worker_nthreads: Optional[int] = None,
                 gpu_copy_nthreads: Optional[int] = None, max_pending: Optional[int] = None,
                 run_inline: Optional[bool] = None):
        if use_ext is None:
            core = loader.load("engine_core", "engine dependency queue") or var_queue
        elif use_ext:
            from .._ext import engine_core as core  # noqa: PLC0415 - explicit request: must exist
        else:
            core = var_queue
        self.core = core
        self._Opr = core.OprBlock
        self._register = core.register
        self._complete_core = core.complete
        self._retire = core.retire
        self._idle_var = core.idle
        self.new_variable = core.ThreadedVar      # the class itself: one call per new array
        self.nthreads = {
            "cpu_worker": cpu_worker_nthreads or env_int("MXNET_CPU_WORKER_NTHREADS", 1),
            "cpu_priority": cpu_priority_nthreads or env_int("MXNET_CPU_PRIORITY_NTHREADS", 4),
            "gpu_worker": gpu_worker_nthreads or env_int("MXNET_GPU_WORKER_NTHREADS", 2),
            "gpu_copy": gpu_copy_nthreads or env_int("MXNET_GPU_COPY_NTHREADS", 2),
        }
        self.max_pending = max_pending or env_int("MXREF_ENGINE_MAX_PENDING", 65536)
        if self.max_pending < 1:
            raise MXNetError(f"MXREF_ENGINE_MAX_PENDING must be >= 1, got {self.max_pending}")
        self.errors = ErrorBook()
        self._pending = core.PendingCounter()
        self._start_idle_runner(env_bool("MXREF_ENGINE_RUN_INLINE", True) if run_inline is None
                                else bool(run_inline))
        self._cond = threading.Condition()        # wait_for_all and back-pressure sleep here
        self._sleepers = 0
        self._groups: Dict[tuple, _WorkerGroup] = {}
        self._cpu_fifo: Dict[int, object] = {}    # device id -> queue (the hot lookup)
        self._group_lock = threading.Lock()
        self._bulk = BulkStatus()
        self._bulkers = 0                         # threads with a bulk size > 0: skip TLS when 0
        self._on_complete = self._complete
        _ENGINES.add(self)
        if env_bool("MXNET_ENGINE_INFO", False):
            sys.stderr.write(f"[mxref engine] {self.describe()}\n")

    @property
    def run_inline(self) -> bool:
        """Whether an eligible op may run on the pushing thread when the engine is idle."""
        return self._idle.enabled

    @run_inline.setter
    def run_inline(self, value: bool) -> None:
        self._idle.enabled = bool(value)

    # ----------------------------------------------------------------------------------- push
    def new_variable(self):
        return self.core.ThreadedVar()

    def push_async(self, fn, ctx, const_vars=(), mutable_vars=(), prop=FnProperty.NORMAL,
                   priority=0, name=None):
        if _inline_users.count and in_inline_scope():
            self._push_inline(fn, ctx, const_vars, mutable_vars, prop, priority, name, False)
            return
        if self._bulkers and self._bulk.fns:
            self._flush_bulk(self._bulk)
        self._push(self._Opr(fn, ctx, const_vars, mutable_vars, prop, priority,
                             name or getattr(fn, "__name__", "op"), False))

    def push_sync(self, fn, ctx, const_vars=(), mutable_vars=(), prop=FnProperty.NORMAL,
                  priority=0, name=None):
        if _inline_users.count and in_inline_scope():
            self._push_inline(fn, ctx, const_vars, mutable_vars, prop, priority, name, True)
            return
        if self._bulkers:
            bulk = self._bulk
            if bulk.size and prop == _NORMAL and priority == 0:
                if bulk.fns and bulk.ctx != ctx:
                    self._flush_bulk(bulk)
                bulk.add(fn, ctx, const_vars, mutable_vars, name or getattr(fn, "__name__", "op"))
                if len(bulk.fns) >= bulk.size:
                    self._flush_bulk(bulk)
                return
            if bulk.fns:
                self._flush_bulk(bulk)
        if self._idle.run(fn, ctx, const_vars, mutable_vars, prop, name):
            return     # the idle run: pushed, run here and completed (see IdleRunner)
        self._push(self._Opr(fn, ctx, const_vars, mutable_vars, prop, priority,
                             name or getattr(fn, "__name__", "op"), True))

    def _idle_failed(self, fn, ctx, reads, writes, name, exc) -> None:
        """An op of the idle run raised: complete it as ``_run_here`` does a failed one (the error
        is stored on its outputs and raised at the next wait; Ctrl-C goes on at once)."""
        blk = self._Opr(fn, ctx, reads, writes, _NORMAL, 0, name, True)
        blk.callback = self._on_complete
        blk.epoch = self.errors.epoch
        self._finish_here(blk, exc)

    def _idle_finish(self, ready) -> None:
        """The idle run's op released others (pushed meanwhile) or retire tokens: hand them on as
        ``_complete`` does, then stop counting the op as pending."""
        for nxt in ready:
            if nxt.__class__ is tuple:
                self._run_delete(*nxt)
        left = self._pending.dec()
        self._idle_wake(left)
        for nxt in ready:
            if nxt.__class__ is not tuple:
                self._dispatch(nxt, False)

    def _idle_wake(self, left: int) -> None:
        if self._sleepers and (left == 0 or left == self.max_pending):
            with self._cond:
                self._cond.notify_all()

    def _push_inline(self, fn, ctx, const_vars, mutable_vars, prop, priority, name, sync) -> None:
        """A push from inside ``inline_scope``: never bulked, run on the thread that makes it ready."""
        if self._bulk.fns:
            self._flush_bulk(self._bulk)
        self._push(self._Opr(fn, ctx, const_vars, mutable_vars, prop, priority,
                             name or getattr(fn, "__name__", "op"), sync, _INLINE))

    def _push(self, blk) -> None:
        blk.callback = self._on_complete
        blk.epoch = self.errors.epoch
        pending = self._pending.inc()
        if pending == 1 and self._idle.enabled and blk.prop == _NORMAL and not blk.flags \
                and getattr(blk.fn, "may_run_inline", False) and not _prof.recording:
            ctx = blk.ctx
            if ctx is None or ctx.device_typeid != _GPU:
                self._run_here(blk)
                return
        if pending > self.max_pending:
            try:
                self._throttle()
            except KeyboardInterrupt:
                # Counted as pending already: register it all the same (it is cancelled with
                # the rest when it comes to run), or the engine would wait for it forever.
                if self._register(blk):
                    self._dispatch(blk, True)
                raise
        if self._register(blk):
            self._dispatch(blk, True)

    def _run_here(self, blk) -> None:
        """Run ``blk`` on the pushing thread: nothing else is pending in the engine.

        NOTE: why this keeps every dependency rule. The push counted itself as the only pending op
        (``pending`` went from 0 to 1 in one atomic step), so no op is queued or running anywhere:
        every variable's queue is empty, ``register`` finds ``blk`` ready at once, and no worker
        runs anything this op could overlap with. Any op pushed meanwhile (another thread, or the
        kernel itself) sees ``pending > 1`` and is queued; if it touches ``blk``'s variables it
        waits for them as usual, released by ``_complete`` below. ``_execute`` and ``_complete``
        are the ones a worker calls, so errors are stored on the outputs exactly as for a queued
        op and raised at the next wait.
        """
        if not self._register(blk):
            return    # cannot happen while nothing else is pending; whoever releases it dispatches it
        errors = self.errors
        if errors.tainted or errors.epoch != blk.epoch or not blk.sync:
            self._execute(blk, None)      # the skip rules and async ops: exactly as on a worker
            _drop_caller_frames(blk.error)
        else:
            # ``_execute``'s clean case (no skip rules, no profiling here).
            self._finish_here(blk, _call(blk, RunContext(blk.ctx, False, None)))

    def _finish_here(self, blk, exc) -> None:
        """Complete ``blk``, run on this thread, with what its function raised (or ``None``)."""
        errors = self.errors
        self._complete(blk, exc)
        if exc is not None and exc.__class__ is KeyboardInterrupt:
            # Ctrl-C inside the op, on this very thread: as on the naive engine the interrupt
            # goes on now (the outputs carry it), not as an op error at some later wait.
            with errors._lock:
                if blk.error in errors.live:
                    errors.live.remove(blk.error)
            raise exc
        _drop_caller_frames(blk.error)

    def _throttle(self) -> None:
        """Back-pressure: block the pushing thread until the pending count is under the bound."""
        if getattr(worker_state, "op_name", None) is not None or in_inline_scope():
            return   # NOTE: a worker waiting for completions could be waiting for itself
        self._sleep_until_pending_at_most(self.max_pending)

    def _sleep_until_pending_at_most(self, bound: int) -> None:
        """Sleep until at most ``bound`` operations are pending (``_complete`` wakes the sleepers
        at 0 and at ``max_pending``). Ctrl-C here cancels the queue, then propagates."""
        try:
            with self._cond:
                self._sleepers += 1
                try:
                    while self._pending.value > bound:
                        self._cond.wait()
                finally:
                    self._sleepers -= 1
        except KeyboardInterrupt:
            self.cancel()
            raise

    def delete_variable(self, delete_fn, ctx, var):
        if self._bulkers and self._bulk.fns:
            self._flush_bulk(self._bulk)          # bulked uses of var are not queued on it yet
        if self._retire(var, (delete_fn, ctx, var)):
            self._run_delete(delete_fn, ctx, var)
        # else: parked on var; _complete runs it when var's last queued op completes

    def _delete_storage(self, handle, ctx, var) -> None:
        """``delete_storage`` where the idle runner's one call does not do it all (bulked ops
        pending, profiling, a busy variable, a handle its pool does not take back at once)."""
        if self._bulkers and self._bulk.fns:
            self._flush_bulk(self._bulk)
        if type(var) is self.core.ThreadedVar and self._idle_var(var) and not _prof.recording:
            # NOTE: nothing is queued on var, and nothing can be any more (its last array is
            # gone), so the delete runs now, as retire would have it, minus the parked token.
            free_now(self.errors, handle, var)
        else:
            super().delete_storage(handle, ctx, var)

    def _run_delete(self, delete_fn, ctx, var) -> None:
        t0 = time.perf_counter_ns() if _prof.recording else 0
        run_delete(self.errors, delete_fn, ctx, var)
        if t0:
            _profiler.record_op("DeleteVariable", ctx, t0, time.perf_counter_ns())

    # ------------------------------------------------------------------------------- dispatch
    def _dispatch(self, blk, pusher: bool) -> None:
        """Send a ready op to its worker queue, or run it here (tiny ops; async/delete at push)."""
        prop = blk.prop
        if blk.flags & _INLINE or (pusher and (prop == _ASYNC or prop == _DELETE)):
            self._execute(blk, None)
            return
        ctx = blk.ctx
        if ctx is not None and ctx.device_typeid == _GPU:
            queue = self._gpu_queue(ctx.device_id, prop)
        elif prop == _CPU_PRIO:
            queue = self._cpu_queue(-1)
        else:
            dev = ctx.device_id if ctx is not None else 0
            queue = self._cpu_fifo.get(dev)
            if queue is None:       # NOTE: not `or`: an empty queue is falsy (it has __len__)
                queue = self._cpu_queue(dev)
        if prop == _DELETE:
            queue.push_front(blk, blk.priority)    # free memory as early as possible
        else:
            queue.push(blk, blk.priority)

    def _cpu_queue(self, dev: int):
        if dev == -1:
            return self._group(("cpu_priority",), "cpu priority", "cpu_priority", True).queue
        group = self._group(("cpu", dev), f"cpu({dev}) worker", "cpu_worker", False)
        self._cpu_fifo[dev] = group.queue
        return group.queue

    def _gpu_queue(self, dev: int, prop: int):
        if prop in _COPIES:
            return self._group(("gpu_copy", dev), f"gpu({dev}) copy", "gpu_copy", True, dev).queue
        if prop == _GPU_PRIO:
            return self._group(("gpu_prio", dev), f"gpu({dev}) priority", "gpu_copy", True, dev).queue
        return self._group(("gpu", dev), f"gpu({dev}) worker", "gpu_worker", False, dev).queue

    def _group(self, key, label, kind, priority, gpu_id=None) -> _WorkerGroup:
        group = self._groups.get(key)
        if group is None:
            with self._group_lock:
                group = self._groups.get(key)
                if group is None:
                    queue = self.core.PriorityQueue() if priority else self.core.FIFOQueue()
                    group = self._groups[key] = _WorkerGroup(self, label, queue, self.nthreads[kind],
                                                             gpu_id)
        return group

    def _worker_loop(self, queue, gpu_id) -> None:
        stream = None
        if gpu_id is not None:
            stream = (_gpu_thread_init or _runtime_stream)(gpu_id, threading.current_thread().name)
        execute = self._execute
        while True:
            blk = queue.pop()
            if blk is None:
                return
            try:
                execute(blk, stream)
            except BaseException as exc:  # noqa: BLE001 - an engine bug must not kill the worker
                import traceback  # noqa: PLC0415
                sys.stderr.write(f"[mxref engine] internal error running {blk.name}:\n"
                                 f"{traceback.format_exc()}")
                if not blk.done:       # fail the op rather than leave its waiters hanging
                    self._complete(blk, exc)
            # Let go of the finished op (and the arrays its function holds) before blocking in pop.
            blk = None

    # -------------------------------------------------------------------------------- execute
    def _execute(self, blk, stream) -> None:
        """Run one ready op (or skip it if an input carries an error), then complete it."""
        errors = self.errors
        if ((errors.tainted or errors.epoch != blk.epoch) and not blk.flags & _WAIT
                and blk.prop not in _SKIP_EXEMPT):
            if errors.epoch != blk.epoch:          # pushed before a KeyboardInterrupt: cancelled
                err = errors.cancelled(blk.name)
            else:
                err = errors.inherited(blk.reads or blk.const_vars)
            if err is not None:
                blk.error = err
                self._complete(blk, None)
                return
        t0 = time.perf_counter_ns() if _prof.recording else 0
        exc = _call(blk, RunContext(blk.ctx, False, stream))
        if t0:
            _profiler.record_op(blk.name, blk.ctx, t0, time.perf_counter_ns())
        if blk.sync or (exc is not None and not blk.done):
            self._complete(blk, exc)

    def _complete(self, blk, exc) -> None:
        """``on_complete``: store the error, release the variables, dispatch what became ready."""
        if blk.done:
            return
        blk.done = True
        if exc is not None:
            name = getattr(blk.fn, "failed_name", None) or blk.name
            blk.error = OpError(name, exc)
            self.errors.record(blk.error)
        if blk.error is not None or self.errors.tainted:
            # Before the core releases the next users: they must see what this op left.
            self.errors.mark(blk.mutable_vars, blk.error)
        ready = self._complete_core(blk)
        if ready:
            # Deletions parked on variables this op was the last user of (retire tokens) run
            # before the op stops counting as pending: once wait_for_all returns, they are done.
            for nxt in ready:
                if nxt.__class__ is tuple:
                    self._run_delete(*nxt)
        left = self._pending.dec()
        # Someone in wait_for_all (waits for 0) or back-pressure (for max_pending): wake them when
        # the count reaches what they wait for, not at every completion of a long drain.
        if self._sleepers and (left == 0 or left == self.max_pending):
            with self._cond:
                self._cond.notify_all()
        for nxt in ready:
            if nxt.__class__ is not tuple:
                self._dispatch(nxt, False)

    # ---------------------------------------------------------------------------------- waits
    def wait_for_var(self, var):
        check_not_in_worker("wait_for_var")
        if self._bulkers and self._bulk.fns:
            self._flush_bulk(self._bulk)
        if not var.ready_to_read():
            # A tiny op that reads var and opens a lock; it runs inline on the thread that frees it.
            signal = threading.Lock()
            signal.acquire()
            self._push(self._Opr(lambda rctx: signal.release(), None, (var,), (), _NORMAL, 0,
                                 "WaitForVar", True, _INLINE | _WAIT))
            try:
                signal.acquire()
            except KeyboardInterrupt:
                self.cancel()
                raise
        self.errors.raise_for_var(var)

    def wait_for_all(self):
        check_not_in_worker("wait_for_all")
        if self._bulkers and self._bulk.fns:
            self._flush_bulk(self._bulk)
        self._drain()
        self.errors.raise_all()

    def _drain(self) -> None:
        if self._pending.value == 0:
            return
        self._sleep_until_pending_at_most(0)

    def cancel(self) -> None:
        """Cancel every operation pushed so far that has not started (what Ctrl-C at a wait does).

        Running operations finish. Each queued one, when its turn comes, does not run: it
        completes at once, and the variables it writes carry ``operator <name> was cancelled by
        KeyboardInterrupt``, so reading them raises (until overwritten) and their readers are
        skipped. Operations pushed afterwards run normally. Cancellations are not pending errors:
        ``wait_for_all`` does not raise them (the interrupt reported them).
        """
        if self._bulk.fns:
            self._flush_bulk(self._bulk)      # bulked ops are queued too: cancel them as well
        self.errors.cancel()

    def num_pending(self) -> int:
        return self._pending.value

    # ----------------------------------------------------------------------------------- bulk
    def set_bulk_size(self, size: int) -> int:
        bulk = self._bulk
        if bulk.fns:
            self._flush_bulk(bulk)
        old, size = bulk.size, max(0, int(size))
        with self._group_lock:
            self._bulkers += (size > 0) - (old > 0)
        bulk.size = size
        return old

    def _flush_bulk(self, bulk) -> None:
        fn, ctx, const_vars, mutable_vars = bulk.take()
        if len(fn.fns) == 1:      # a bulk of one is just the op, under its own name
            self._push(self._Opr(fn.fns[0], ctx, const_vars, mutable_vars, _NORMAL, 0, fn.names[0], True))
        else:
            self._push(self._Opr(fn, ctx, const_vars, mutable_vars, _NORMAL, 0, "ImperativeBulk", True))

    # ------------------------------------------------------------------------------ lifecycle
    def stop(self) -> None:
        """Finish every pending op, then stop the worker threads (they restart on the next push)."""
        check_not_in_worker("engine stop")
        if self._bulk.fns:
            self._flush_bulk(self._bulk)
        self._drain()
        with self._group_lock:
            groups, self._groups = list(self._groups.values()), {}
            self._cpu_fifo = {}
        for group in groups:
            group.stop()

    def _after_fork_in_child(self) -> None:
        # Only the forking thread survives a fork: forget the parent's workers, queues and pending
        # ops (they cannot complete here); the child starts fresh workers on its first push.
        self._groups, self._cpu_fifo = {}, {}
        self._group_lock = threading.Lock()
        self._cond = threading.Condition()
        self._sleepers = 0
        self._pending = self.core.PendingCounter()
        self._start_idle_runner(self._idle.enabled)

    def _start_idle_runner(self, enabled: bool) -> None:
        """A fresh idle runner over this engine's pending counter (at start and after a fork)."""
        self._idle = self.core.IdleRunner(self, self._pending, self.errors, _prof, worker_state,
                                          RunContext, _inline_users, enabled)
        # One call for push_sync when the engine is idle: the runner's push_sync runs the op or
        # hands it to the class's push_sync below (a patched instance attribute still sees all).
        self.push_sync = self._idle.push_sync
        self.delete_storage = self._idle.delete_storage     # a dropped array: one call when idle

    def describe(self) -> dict:
        """Engine type, active core (cython/python), thread counts, running groups, bound."""
        return {"type": self.name, "core": self.core.IMPLEMENTATION, **{f"{k}_nthreads": v for k, v in
                self.nthreads.items()}, "max_pending": self.max_pending,
                "groups": sorted(g.name for g in self._groups.values())}


def _drop_caller_frames(err) -> None:
    """Let a stored error of an op run on the calling thread keep its traceback as text only.

    NOTE: a traceback's first frame links (``f_back``) to the whole stack of the thread that caught
    it. On a worker that stack is the worker loop; on the calling thread it is the user's code, and
    the stored error (sticky on the op's outputs) would keep every local of those frames alive, the
    arrays of a half-built executor included, and their memory. ``OpError.tb_text`` already holds
    the text the wait shows."""
    if err is not None and err.exc.__traceback__ is not None:
        err.exc.__traceback__ = None


def _reset_engines_in_child() -> None:
    for eng in list(_ENGINES):
        eng._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_engines_in_child)
