# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython twin of ``mxref.engine.var_queue``: dependency queues, op blocks and blocking work queues.

Same classes, functions and behavior as the pure-Python specification; only the machinery differs:

* Variable queues are C linked lists of ``VarBlock`` structs from a free list (MXNet's
  ``ObjectPool``), and wait counters are C integers.
* The GIL is the lock. Every state transition below is straight C code that runs no Python code
  (no calls, no allocation of garbage-collected objects, no reference drop that could free one)
  while the state is inconsistent, so no other thread can observe it half-done. This replaces
  MXNet's per-variable mutex. NOTE: a free-threaded CPython build would need real mutexes here.
* The blocking queues use a pthread mutex and condition variable and wait with the GIL released.
  A thread never asks for the GIL while holding a queue mutex, so the two locks cannot deadlock.
"""
from cpython.ref cimport Py_DECREF, Py_INCREF, PyObject
from cpython.list cimport PyList_Append
from libc.stdlib cimport free, malloc, realloc

cimport cython
from mxref._ext.storage_core cimport take_back_hit
from mxref._ext.thread_state cimport WorkerState
from mxref._ext import storage_core as _storage_core

from mxref.base import MXNetError
from mxref.engine.base import ErrorBook, dedup_vars

include "slots.pxi"

from mxref.context import Context
from mxref.storage.handle import Handle

cdef Py_ssize_t CX_TYPEID = _slot(Context, "device_typeid")    # an op's context: its device
cdef Py_ssize_t HD_POOL = _slot(Handle, "_pool")      # a dropped array's handle: its pool
cdef object _compiled_take_back = _storage_core.take_back


cdef inline object _own_attr(object obj, str name):
    """``getattr(obj, name, None)`` for an attribute kept in ``obj.__dict__`` (a pool's compiled
    ``_give_back``): the dict's lookup alone; the ordinary lookup for anything else."""
    try:
        value = _instance_dict(obj).get(name)
    except AttributeError:              # no __dict__ (None, a slotted object)
        value = None
    return getattr(obj, name, None) if value is None else value

IMPLEMENTATION = "cython"
WRITE_TRIGGERED = -1
cdef enum:
    C_WRITE_TRIGGERED = -1
    MAX_FREE_BLOCKS = 65536


cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_mutex_t:
        pass
    ctypedef struct pthread_cond_t:
        pass
    int pthread_mutex_init(pthread_mutex_t*, void*)
    int pthread_mutex_destroy(pthread_mutex_t*)
    int pthread_mutex_lock(pthread_mutex_t*)
    int pthread_mutex_unlock(pthread_mutex_t*)
    int pthread_cond_init(pthread_cond_t*, void*)
    int pthread_cond_destroy(pthread_cond_t*)
    int pthread_cond_wait(pthread_cond_t*, pthread_mutex_t*)
    int pthread_cond_signal(pthread_cond_t*)


# --------------------------------------------------------------------------------------------
# Op blocks
# --------------------------------------------------------------------------------------------

@cython.freelist(512)
cdef class OprBlock:
    """One pushed operation: the function, its deduplicated variables, routing and its wait counter."""

    cdef public object fn, ctx, name, error, callback
    # Every variable the op reads, in push order, when dedup dropped one (``a += 1`` reads a
    # written variable); None when ``const_vars`` are all its reads. Errors are judged by reads.
    cdef public object reads
    cdef public tuple const_vars, mutable_vars
    cdef public int prop, priority, flags
    cdef public bint sync, done
    cdef public Py_ssize_t wait, epoch

    def __init__(self, fn, ctx, const_vars=(), mutable_vars=(), int prop=0, int priority=0,
                 name="op", bint sync=True, int flags=0):
        cdef tuple mut = _unique_vars(mutable_vars, (), name)
        self.const_vars = _unique_vars(const_vars, mut, name)
        self.mutable_vars = mut
        if len(self.const_vars) != len(const_vars):       # dedup dropped some reads
            self.reads = tuple(const_vars)
        self.fn = fn
        self.ctx = ctx
        self.prop = prop
        self.priority = priority
        self.name = name
        self.sync = sync
        self.flags = flags
        self.wait = len(self.const_vars) + len(mut) + 1
        self.error = None
        self.callback = None
        self.done = False
        self.epoch = 0              # the engine's cancellation epoch at push (see ErrorBook)

    def decr_wait(self, Py_ssize_t n=1):
        """Release ``n`` dependencies; ``True`` for exactly the call that brings the count to zero."""
        self.wait -= n
        return self.wait == 0

    def __call__(self, exc=None):
        self.callback(self, exc)

    def __repr__(self):
        return f"OprBlock({self.name}, wait={self.wait})"


cdef tuple _unique_vars(object seq, tuple exclude, object name):
    """``seq`` as a tuple of distinct ThreadedVars not in ``exclude`` (reused as is when clean)."""
    cdef tuple t = seq if type(seq) is tuple else tuple(seq)
    cdef Py_ssize_t n = len(t), m = len(exclude), i, j
    cdef object a
    # Pairwise comparison beats hashing for the few variables of an imperative op; executor
    # segments can list hundreds, so those go through the set-based check instead.
    cdef bint small = n * (n + m) <= 1024
    cdef bint clean = True
    for i in range(n):
        a = t[i]
        if type(a) is not ThreadedVar:
            raise MXNetError(f"operator {name}: {a!r} is not a variable of the threaded engine "
                             "(create variables with engine.new_variable())")
        if clean and small:
            for j in range(i):
                if t[j] is a:
                    clean = False
                    break
        if clean and small:
            for j in range(m):
                if exclude[j] is a:
                    clean = False
                    break
    if clean:
        if not small:
            clean = len(set(t)) == n and (m == 0 or set(t).isdisjoint(exclude))
        if clean:
            return t
    if not small:
        if m:
            return tuple(dedup_vars(t, exclude)[0])
        return tuple(dedup_vars((), t)[1])
    # A few variables with a repeat (``a += 1`` reads and writes one): keep each first occurrence
    # not in ``exclude``, as dedup_vars does, without its dicts and sets.
    cdef list keep = []
    cdef bint dup
    for i in range(n):
        a = t[i]
        dup = False
        for j in range(i):
            if t[j] is a:
                dup = True
                break
        if not dup:
            for j in range(m):
                if exclude[j] is a:
                    dup = True
                    break
        if not dup:
            keep.append(a)
    return tuple(keep)


# --------------------------------------------------------------------------------------------
# Variables
# --------------------------------------------------------------------------------------------

ctypedef struct VarBlock:
    VarBlock* next
    PyObject* trigger        # an owned reference to the OprBlock, NULL in the sentinel
    bint write

cdef VarBlock* _free_blocks = NULL
cdef Py_ssize_t _num_free_blocks = 0


cdef inline VarBlock* _new_block() except NULL:
    global _free_blocks, _num_free_blocks
    cdef VarBlock* b = _free_blocks
    if b is not NULL:
        _free_blocks = b.next
        _num_free_blocks -= 1
    else:
        b = <VarBlock*>malloc(sizeof(VarBlock))
        if b is NULL:
            raise MemoryError("engine variable queue")
    b.next = NULL
    b.trigger = NULL
    b.write = False
    return b


cdef inline void _free_block(VarBlock* b) noexcept:
    """Return a block whose trigger reference was already handed on or dropped."""
    global _free_blocks, _num_free_blocks
    if _num_free_blocks < MAX_FREE_BLOCKS:
        b.next = _free_blocks
        _free_blocks = b
        _num_free_blocks += 1
    else:
        free(b)


cdef inline void _release(PyObject* trigger, list out, bint count) noexcept:
    """Hand a released op on: to ``out`` always (trace mode) or when its wait reaches 0 (``count``)."""
    cdef OprBlock op = <OprBlock>trigger
    if count:
        op.wait -= 1
        if op.wait != 0:
            return
    PyList_Append(out, op)


@cython.freelist(1024)
cdef class ThreadedVar:
    """An engine variable with its dependency queue (MXNet's ``ThreadedVar``)."""

    cdef VarBlock* head
    cdef VarBlock* pending_write
    cdef Py_ssize_t num_pending_reads
    cdef public long long version
    cdef public object exception
    cdef public bint deleted
    cdef list retired          # tokens of retire() calls waiting for the queue to empty, or None
    cdef object __weakref__

    def __cinit__(self):
        self.head = _new_block()
        self.pending_write = NULL
        self.num_pending_reads = 0
        self.version = 0
        self.exception = None
        self.deleted = False
        self.retired = None

    def __dealloc__(self):
        # Normally only the sentinel is left; queued blocks hold ops that hold this var.
        cdef VarBlock* b = self.pending_write if self.pending_write is not NULL else self.head
        cdef VarBlock* nxt
        while b is not NULL:
            nxt = b.next
            if b.trigger is not NULL:
                Py_DECREF(<object>b.trigger)
            _free_block(b)
            b = nxt

    def ready_to_read(self):
        """No write is queued or running: a read pushed now would run at once."""
        return self.pending_write is NULL

    def append_read(self, OprBlock opr not None):
        """Queue a read; ``True`` when it may run now (no write ahead of it)."""
        return _append_read(self, opr)

    def append_write(self, OprBlock opr not None):
        """Queue a write; ``True`` when it may run now (nothing ahead of it)."""
        return _append_write(self, opr)

    def complete_read(self):
        """A read finished; return the write it releases (the last reader lets the writer go)."""
        out = []
        _complete_read(self, out, False)
        return out[0] if out else None

    def complete_write(self):
        """The pending write finished; return what it releases (reads behind it, or the next write)."""
        out = []
        _complete_write(self, out, False)
        return out

    def __repr__(self):
        return f"ThreadedVar(version={self.version})"


cdef inline bint _append_read(ThreadedVar v, OprBlock opr) except -1:
    cdef VarBlock* nxt
    if v.pending_write is NULL:
        v.num_pending_reads += 1
        return True
    nxt = _new_block()
    Py_INCREF(opr)
    v.head.trigger = <PyObject*>opr
    v.head.next = nxt
    v.head = nxt
    return False


cdef inline bint _append_write(ThreadedVar v, OprBlock opr) except -1:
    cdef VarBlock* blk = v.head
    cdef VarBlock* nxt = _new_block()
    Py_INCREF(opr)
    blk.trigger = <PyObject*>opr
    blk.write = True
    blk.next = nxt
    v.head = nxt
    if v.pending_write is NULL:
        v.pending_write = blk
        if v.num_pending_reads == 0:
            v.num_pending_reads = C_WRITE_TRIGGERED
            return True
    return False


cdef inline void _complete_read(ThreadedVar v, list out, bint count) noexcept:
    v.num_pending_reads -= 1
    if v.num_pending_reads == 0 and v.pending_write is not NULL:
        v.num_pending_reads = C_WRITE_TRIGGERED
        _release(v.pending_write.trigger, out, count)


cdef void _complete_write(ThreadedVar v, list out, bint count) noexcept:
    cdef VarBlock* done = v.pending_write
    cdef VarBlock* blk = done.next
    cdef VarBlock* nxt
    cdef PyObject* finished = done.trigger
    cdef Py_ssize_t reads = 0
    v.version += 1
    _free_block(done)
    while blk is not v.head and not blk.write:
        _release(blk.trigger, out, count)
        # NOTE: safe to drop here: the op is now held by `out` or by another variable's queue.
        Py_DECREF(<object>blk.trigger)
        nxt = blk.next
        _free_block(blk)
        blk = nxt
        reads += 1
    v.num_pending_reads = reads
    if blk is v.head:
        v.pending_write = NULL
    else:
        v.pending_write = blk
        if reads == 0:
            v.num_pending_reads = C_WRITE_TRIGGERED
            _release(blk.trigger, out, count)
    # The state is consistent again: dropping the finished op may now run arbitrary finalizers.
    # (NULL: the write of an op run by ``IdleRunner``, which queues no op block.)
    if finished is not NULL:
        Py_DECREF(<object>finished)


cpdef bint register(OprBlock opr) except -1:
    """Append ``opr`` to all its variables; ``True`` when it is ready to run right away."""
    cdef Py_ssize_t ready = 1                   # the +1 guard, released last
    cdef ThreadedVar v
    for v in opr.const_vars:
        ready += _append_read(v, opr)
    for v in opr.mutable_vars:
        ready += _append_write(v, opr)
    opr.wait -= ready
    return opr.wait == 0


cpdef list complete(OprBlock opr):
    """Mark ``opr`` complete on all its variables; return the ops that became ready to run, and the
    ``retire`` tokens of the variables whose queue it emptied."""
    cdef list ready = []
    cdef ThreadedVar v
    cdef object error = opr.error
    for v in opr.const_vars:
        _complete_read(v, ready, True)
        if v.retired is not None:
            _take_retired(v, ready)
    for v in opr.mutable_vars:
        if error is not None:
            v.exception = error
        _complete_write(v, ready, True)
        if v.retired is not None:
            _take_retired(v, ready)
    return ready


cpdef bint retire(object var, object token) except -1:
    """Ask to delete ``var`` after every operation queued on it: ``True`` when none is (the caller
    deletes it now); else ``token`` is returned by the ``complete`` that empties its queue."""
    if type(var) is not ThreadedVar:
        raise MXNetError(f"DeleteVariable: {var!r} is not a variable of the threaded engine "
                         "(create variables with engine.new_variable())")
    cdef ThreadedVar v = <ThreadedVar>var
    cdef list parked = None
    # NOTE: the list is made before the test. Allocating may run the garbage collector, whose
    # finalizers may let another thread complete v's last op: between the test and the parking
    # no Python code may run, or the token could be parked on an idle variable and never return.
    if v.retired is None:
        parked = [token]
    if v.pending_write is NULL and v.num_pending_reads == 0:
        return True
    if v.retired is None:
        v.retired = parked if parked is not None else [token]
    else:
        v.retired.append(token)            # grows the list's array only: no collection
    return False


cdef inline void _take_retired(ThreadedVar v, list out) noexcept:
    # Under the GIL with no Python code run in between: the emptiness test and the hand-over are
    # one step. The parked list dies here, but its tokens live on in `out`.
    if v.pending_write is NULL and v.num_pending_reads == 0:
        out.extend(v.retired)
        v.retired = None


cpdef bint idle(ThreadedVar var):
    """Nothing is queued on or running against ``var`` (a delete of it may run at once)."""
    return var.pending_write is NULL and var.num_pending_reads == 0


# --------------------------------------------------------------------------------------------
# The idle run: push, run and complete in one call
# --------------------------------------------------------------------------------------------

cdef enum:
    IDLE_MAX_VARS = 8           # more variables: the ordinary push handles them


cdef class SyncFn:
    """A pushed op function with a C entry (declared in engine_core.pxd): the engine calls ``run``.

    The engine takes any callable ``fn(run_ctx)``. The imperative kernel call (``dispatch_core.
    KernelCall``) derives from this class: the idle run then reads ``may_run_inline`` from its C
    field and calls ``run`` as a C method, where a plain callable costs an attribute lookup and a
    call through ``__call__`` with an argument tuple. ``__call__`` calls ``run``, so a worker
    thread, the naive engine and the pure-Python twins see an ordinary callable.
    NOTE: a subclass implements ``run``; a Python subclass overriding ``__call__`` is not seen by
    the idle run.
    """

    def __call__(self, run_ctx):
        return self.run(run_ctx)

    cdef object run(self, object run_ctx):
        raise NotImplementedError(f"{type(self).__name__} does not implement run")


cdef class IdleRunner:
    """Runs an eligible op on the calling thread when the whole engine is idle, in one call.

    The twin of ``var_queue.IdleRunner``; ``ThreadedEnginePerDevice.push_sync`` asks it first. On
    an idle engine the state after push + run + complete equals the state before (every queue
    empty, ``pending`` 0) but for the written variables' versions, so no op block is made and no
    worker queue, error check or completion dispatch is touched. See docs/architecture/engine.md,
    "The idle run". ``run`` answers ``False`` (nothing done) whenever the ordinary path is needed.
    """

    # (its fields and C methods are declared in engine_core.pxd, for dispatch_core to cimport)

    def __init__(self, engine, PendingCounter pending not None, errors, prof_state, wstate,
                 run_context, inline_users, bint enabled):
        self.engine = engine
        self.slow_push = type(engine).push_sync
        self.inline_users = inline_users
        self.pending = pending
        self.errors = errors
        self.prof = prof_state
        self.engine_ns = engine.__dict__
        self.prof_ns = prof_state.__dict__
        self.tainted_at = _slot(ErrorBook, "tainted") if type(errors) is ErrorBook else -1
        self.wstate = wstate
        self.run_context = run_context
        self.enabled = enabled
        self.runs = 0
        self.last_ctx = self.last_rctx = None

    cdef object _tainted(self):
        """``self.errors.tainted``."""
        return self.errors.tainted if self.tainted_at < 0 else _get(self.errors, self.tainted_at)

    def run(self, fn, ctx, const_vars, mutable_vars, int prop=0, name=None):
        """Run ``fn`` now if the engine is idle and the op may run inline; ``True`` when done."""
        return self._run(fn, ctx, const_vars, mutable_vars, prop, name)

    cdef bint _run(self, fn, ctx, const_vars, mutable_vars, int prop, name) except -1:
        cdef tuple reads, writes
        cdef Py_ssize_t nr, nw, n_done = 0, i, j
        cdef PyObject* done_reads[IDLE_MAX_VARS]
        cdef ThreadedVar v
        cdef VarBlock* blk
        cdef bint dup
        if not self.enabled or prop != 0 or self.pending.value != 0:
            return False
        reads = const_vars if type(const_vars) is tuple else tuple(const_vars)
        writes = mutable_vars if type(mutable_vars) is tuple else tuple(mutable_vars)
        nr, nw = len(reads), len(writes)
        if nr > IDLE_MAX_VARS or nw > IDLE_MAX_VARS:
            return False
        # Everything that may run Python code comes first (bulking and inline scopes: push_sync) ...
        if self.engine_ns.get("_bulkers") or self.inline_users.count:
            return False
        if self.prof_ns["recording"] or self._tainted():
            return False
        compiled = isinstance(fn, SyncFn)
        if not ((<SyncFn>fn).may_run_inline if compiled else getattr(fn, "may_run_inline", False)):
            return False
        if ctx is not None and (_get(ctx, CX_TYPEID) if type(ctx) is Context else ctx.device_typeid) == 2:
            # gpu: kernels are asynchronous there
            return False
        if name is None:
            name = getattr(fn, "__name__", "op")
        rctx = self.last_rctx
        if ctx is not self.last_ctx:
            rctx = self.run_context(ctx, False, None)
            self.last_ctx, self.last_rctx = ctx, rctx
        # ... then, with no Python code in between (the GIL makes it one step): the engine is idle,
        # every variable is a distinct idle ThreadedVar, and the op is registered on them.
        if self.pending.value != 0:
            return False
        for i in range(nw):
            if type(writes[i]) is not ThreadedVar:
                return False
            v = <ThreadedVar>writes[i]
            if not idle(v):
                return False
            for j in range(i):
                if writes[j] is v:
                    return False
        for i in range(nr):
            if type(reads[i]) is not ThreadedVar:
                return False
            if not idle(<ThreadedVar>reads[i]):
                return False
        for i in range(nw):
            v = <ThreadedVar>writes[i]
            blk = v.head
            blk.next = _new_block()
            blk.write = True               # trigger stays NULL: no op block stands behind it
            v.head = blk.next
            v.pending_write = blk
            v.num_pending_reads = C_WRITE_TRIGGERED
        for i in range(nr):                # each distinct read not also written, as OprBlock keeps
            v = <ThreadedVar>reads[i]
            dup = False
            for j in range(nw):
                if writes[j] is v:
                    dup = True
            for j in range(n_done):
                if done_reads[j] == <PyObject*>v:
                    dup = True
            if not dup:
                v.num_pending_reads += 1
                done_reads[n_done] = <PyObject*>v
                n_done += 1
        self.pending.value = 1
        # Run it as a worker would (``worker_state.op_name`` names it: a wait inside is refused).
        wstate = self.wstate
        if type(wstate) is WorkerState:     # the compiled state: a thread-storage slot
            outer = (<WorkerState>wstate).swap_op_name(name)
        else:
            outer = getattr(wstate, "op_name", None)
            wstate.op_name = name
        exc = None
        try:
            if compiled:
                (<SyncFn>fn).run(rctx)
            else:
                fn(rctx)
        except BaseException as e:  # noqa: BLE001 - stored on the outputs, raised at a wait
            exc = e
        if type(wstate) is WorkerState:
            (<WorkerState>wstate).swap_op_name(outer)
        else:
            wstate.op_name = outer
        if exc is not None:
            # The rare case: the engine's own completion stores the error with every rule.
            self.engine._idle_failed(fn, ctx, tuple([<object>done_reads[j] for j in range(n_done)]),
                                     writes, name, exc)
            return True
        cdef list ready = []
        for j in range(n_done):
            v = <ThreadedVar>done_reads[j]
            _complete_read(v, ready, True)
            if v.retired is not None:
                _take_retired(v, ready)
        for i in range(nw):
            v = <ThreadedVar>writes[i]
            _complete_write(v, ready, True)
            if v.retired is not None:
                _take_retired(v, ready)
        self.runs += 1
        if ready:                          # something was pushed on these variables meanwhile
            self.engine._idle_finish(ready)
            return True
        self.pending.value -= 1
        if self.engine_ns.get("_sleepers"):    # read after the count drops (see _complete)
            self.engine._idle_wake(self.pending.value)
        return True

    def push_sync(self, fn, ctx, const_vars=(), mutable_vars=(), prop=0, priority=0, name=None):
        """The engine's ``push_sync``: the idle run when ``run`` takes the op, else the class's
        ``push_sync`` (the ordinary path)."""
        self._push_sync(fn, ctx, const_vars, mutable_vars, prop, priority, name)

    cdef int _push_sync(self, fn, ctx, const_vars, mutable_vars, int prop, int priority, name) except -1:
        """``push_sync`` as a C call (the compiled dispatch's entry)."""
        if not self._run(fn, ctx, const_vars, mutable_vars, prop, name):
            self.slow_push(self.engine, fn, ctx, const_vars, mutable_vars, prop, priority, name)
        return 0

    def delete_storage(self, handle, ctx, var):
        """``Engine.delete_storage`` in one call when ``var`` is idle: the pool takes ``handle``
        back (``None``: nothing to give) and ``var`` is retired, as ``free_now`` does; any other
        case goes to the engine's ``_delete_storage``.

        NOTE: an idle variable of a dropped chunk stays idle: nothing can push on it any more.
        """
        self._delete(handle, ctx, var)

    cdef int _delete(self, handle, ctx, var) except -1:
        """``delete_storage``'s body, a C call for the compiled ``Chunk.__del__``."""
        cdef ThreadedVar v
        if (self.engine_ns.get("_bulkers") or self.prof_ns["recording"] or type(var) is not ThreadedVar
                or (<ThreadedVar>var).pending_write is not NULL
                or (<ThreadedVar>var).num_pending_reads != 0):
            self.engine._delete_storage(handle, ctx, var)
            return 0
        if handle is not None:
            pool = _get(handle, HD_POOL) if type(handle) is Handle else handle._pool
            give = _own_attr(pool, "_give_back")
            if give is _compiled_take_back:     # the pool's compiled free: called as C
                if not take_back_hit(pool, handle):
                    self.engine._delete_storage(handle, ctx, var)
                    return 0
            elif give is None or not give(pool, handle):
                self.engine._delete_storage(handle, ctx, var)
                return 0
        v = <ThreadedVar>var
        v.deleted = True
        if v.exception is not None:
            self.errors.mark((v,), None)
        v.version += 1
        return 0


# --------------------------------------------------------------------------------------------
# Blocking queues
# --------------------------------------------------------------------------------------------

cdef class _BlockingQueue:
    """What both blocking queues share: the mutex, the condition a waiting ``pop`` sleeps on, the
    item count and the number of sleepers; subclasses keep the items and say which comes next."""

    cdef pthread_mutex_t mu
    cdef pthread_cond_t cv
    cdef Py_ssize_t size, nwait

    def __cinit__(self):
        pthread_mutex_init(&self.mu, NULL)
        pthread_cond_init(&self.cv, NULL)
        self.size = self.nwait = 0

    def __dealloc__(self):      # runs after the subclass has released its items
        pthread_cond_destroy(&self.cv)
        pthread_mutex_destroy(&self.mu)

    cdef PyObject* _take(self) noexcept nogil:
        # Called with the mutex held and size > 0: remove the next item and return it.
        return NULL

    def pop(self):
        """Block until an item is available and return the next one."""
        cdef PyObject* p
        pthread_mutex_lock(&self.mu)        # fast path: an item is waiting, keep the GIL
        if self.size:
            p = self._take()
            pthread_mutex_unlock(&self.mu)
        else:
            pthread_mutex_unlock(&self.mu)
            with nogil:                     # NOTE: unlock before taking the GIL back
                pthread_mutex_lock(&self.mu)
                while self.size == 0:
                    self.nwait += 1
                    pthread_cond_wait(&self.cv, &self.mu)
                    self.nwait -= 1
                p = self._take()
                pthread_mutex_unlock(&self.mu)
        item = <object>p
        Py_DECREF(item)                     # the queue's reference; `item` holds its own
        return item

    def __len__(self):
        return self.size


cdef class FIFOQueue(_BlockingQueue):
    """A blocking FIFO (a ring buffer); ``push_front`` lets ``DELETE_VAR`` ops jump the line."""

    cdef PyObject** buf
    cdef Py_ssize_t cap, start

    def __cinit__(self):
        self.cap = 64
        self.buf = <PyObject**>malloc(self.cap * sizeof(PyObject*))
        if self.buf is NULL:
            raise MemoryError("engine FIFO queue")
        self.start = 0

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(self.size):
            Py_DECREF(<object>self.buf[(self.start + i) % self.cap])
        free(self.buf)

    cdef int _grow(self) nogil:
        # Called with the mutex held: unroll the ring into a buffer twice as large.
        cdef PyObject** nb = <PyObject**>malloc(2 * self.cap * sizeof(PyObject*))
        cdef Py_ssize_t i
        if nb is NULL:
            return -1
        for i in range(self.size):
            nb[i] = self.buf[(self.start + i) % self.cap]
        free(self.buf)
        self.buf = nb
        self.start = 0
        self.cap *= 2
        return 0

    cdef int _put(self, object item, bint front) except -1:
        cdef int rc = 0
        Py_INCREF(item)
        pthread_mutex_lock(&self.mu)
        if self.size == self.cap:
            rc = self._grow()
        if rc == 0:
            if front:
                self.start = (self.start - 1 + self.cap) % self.cap
                self.buf[self.start] = <PyObject*>item
            else:
                self.buf[(self.start + self.size) % self.cap] = <PyObject*>item
            self.size += 1
            if self.nwait:
                pthread_cond_signal(&self.cv)
        pthread_mutex_unlock(&self.mu)
        if rc != 0:
            Py_DECREF(item)
            raise MemoryError("engine FIFO queue")
        return 0

    def push(self, item, long long priority=0):
        self._put(item, False)

    def push_front(self, item, long long priority=0):
        self._put(item, True)

    cdef PyObject* _take(self) noexcept nogil:
        cdef PyObject* p = self.buf[self.start]
        self.start = (self.start + 1) % self.cap
        self.size -= 1
        return p



ctypedef struct HeapEntry:
    long long priority
    unsigned long long seq
    PyObject* item


cdef inline bint _above(HeapEntry* a, HeapEntry* b) noexcept nogil:
    # Max-heap on priority; among equals the earlier push wins (stable).
    return a.priority > b.priority or (a.priority == b.priority and a.seq < b.seq)


cdef class PriorityQueue(_BlockingQueue):
    """A blocking max-priority queue (higher pops first; equal priorities in push order)."""

    cdef HeapEntry* heap
    cdef Py_ssize_t cap
    cdef unsigned long long seq

    def __cinit__(self):
        self.cap = 64
        self.heap = <HeapEntry*>malloc(self.cap * sizeof(HeapEntry))
        if self.heap is NULL:
            raise MemoryError("engine priority queue")
        self.seq = 0

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(self.size):
            Py_DECREF(<object>self.heap[i].item)
        free(self.heap)

    def push(self, item, long long priority=0):
        cdef Py_ssize_t i, parent
        cdef HeapEntry e
        cdef HeapEntry* nh
        Py_INCREF(item)
        pthread_mutex_lock(&self.mu)
        if self.size == self.cap:
            nh = <HeapEntry*>realloc(self.heap, 2 * self.cap * sizeof(HeapEntry))
            if nh is NULL:
                pthread_mutex_unlock(&self.mu)
                Py_DECREF(item)
                raise MemoryError("engine priority queue")
            self.heap = nh
            self.cap *= 2
        e.priority = priority
        e.seq = self.seq
        e.item = <PyObject*>item
        self.seq += 1
        i = self.size
        self.size += 1
        while i > 0:
            parent = (i - 1) // 2
            if not _above(&e, &self.heap[parent]):
                break
            self.heap[i] = self.heap[parent]
            i = parent
        self.heap[i] = e
        if self.nwait:
            pthread_cond_signal(&self.cv)
        pthread_mutex_unlock(&self.mu)

    def push_front(self, item, long long priority=0):
        # As dmlc's ConcurrentBlockingQueue: in a priority queue the priority alone decides.
        self.push(item, priority)

    cdef PyObject* _take(self) noexcept nogil:
        cdef PyObject* p = self.heap[0].item
        cdef HeapEntry last
        cdef Py_ssize_t i = 0, child
        self.size -= 1
        last = self.heap[self.size]
        while True:
            child = 2 * i + 1
            if child >= self.size:
                break
            if child + 1 < self.size and _above(&self.heap[child + 1], &self.heap[child]):
                child += 1
            if not _above(&self.heap[child], &last):
                break
            self.heap[i] = self.heap[child]
            i = child
        if self.size:
            self.heap[i] = last
        return p



cdef class PendingCounter:
    """The number of pushed and not yet completed operations (atomic under the GIL)."""

    def __cinit__(self):
        self.value = 0

    cpdef Py_ssize_t inc(self):
        self.value += 1
        return self.value

    cpdef Py_ssize_t dec(self):
        self.value -= 1
        return self.value
