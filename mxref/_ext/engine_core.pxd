# The engine's C entry points for the compiled dispatch (engine_core.pyx has the bodies).
#
# ``dispatch_core`` cimports these so that an imperative call reaches the idle run and the
# release of a dropped array's memory as C calls: ``IdleRunner._run`` / ``_delete`` instead of the
# Python-level ``push_sync`` / ``delete_storage`` (each a vectorcall that parses seven or three
# arguments), and ``SyncFn.run`` instead of calling the op function through ``__call__``.


cdef class PendingCounter:
    cdef public Py_ssize_t value
    cpdef Py_ssize_t inc(self)
    cpdef Py_ssize_t dec(self)


cdef class SyncFn:
    # An op function with a C entry: what the engine pushes is any callable ``fn(run_ctx)``; one
    # that derives from this class is run through ``run`` (no argument tuple, no lookup of
    # ``may_run_inline``). ``__call__`` calls ``run``, so every other caller sees a callable.
    cdef public bint may_run_inline      # it never blocks on another thread (see IdleRunner)
    cdef object run(self, object run_ctx)


cdef class IdleRunner:
    cdef PendingCounter pending
    cdef object engine, errors, prof, wstate, run_context, inline_users, last_ctx, last_rctx
    # The flags read on every push come straight from their owners' storage: the engine's and
    # the profiler state's ``__dict__`` (``_bulkers``, ``recording``) and the error book's slot
    # (``tainted``); an attribute lookup costs three times the dict's own (each rebinding lands
    # in the same dict, so nothing is missed).
    cdef dict engine_ns, prof_ns
    cdef Py_ssize_t tainted_at          # ErrorBook's ``tainted`` slot, -1: read the attribute
    cdef object slow_push
    cdef public bint enabled
    cdef public long long runs          # ops run this way (tests and benchmarks read it)

    cdef object _tainted(self)
    cdef bint _run(self, fn, ctx, const_vars, mutable_vars, int prop, name) except -1
    cdef int _push_sync(self, fn, ctx, const_vars, mutable_vars, int prop, int priority, name) except -1
    cdef int _delete(self, handle, ctx, var) except -1
