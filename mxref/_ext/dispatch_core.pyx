# cython: language_level=3, boundscheck=False, wraparound=False
"""Cython twin of the tuned ``imperative.invoke``, its ``_KernelCall``, NDArray's arithmetic
methods and ``Chunk.__del__``: the same steps, compiled.

The pure-Python twins (``mxref/ndarray/imperative.py``, ``ndarray.py``, ``chunk.py``) are the
readable form of this file and the ones that run in pure mode; ``invoke_plain.py`` stays the
specification of all. This copy does the same steps in the same order with the same objects
(results are bit-identical: ``tests/test_plain_paths.py`` and ``tests/_ext/test_dispatch_core.py``
compare them); only the interpreter's work per step is gone: local variables are C variables, the
usual arities are C branches, ``KernelCall`` is an extension type, and the ``__slots__`` fields of
NDArray, Chunk, the plan and the context are read and written by offset (``slots.pxi``). ``bind``
hands it the imperative module's caches and hooks once, at import; ``install`` puts the methods
on the classes.

Where a call goes, in order: ``a + b`` -> ``_add`` -> ``_binary`` (the operator's cached default
parameters) -> ``_invoke``; a cached plan marked ``simple`` (one output, nothing else to arrange)
takes ``_invoke_simple``, anything else the general steps below it; both push one ``KernelCall``,
whose ``__call__`` on the engine runs the kernel on numpy views (``_data_of`` allocates a fresh
output's memory from the pool at that moment).
"""
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.method cimport PyMethod_GET_FUNCTION, PyMethod_GET_SELF
from cpython.ref cimport Py_INCREF
from mxref._ext.engine_core cimport IdleRunner, SyncFn
from mxref._ext.storage_core cimport lend_hit
from mxref._ext import storage_core as _storage_core

from types import MethodType


include "slots.pxi"
include "views.pxi"
include "ufunc_loop.pxi"


cdef Py_ssize_t ND_CHUNK, ND_SHAPE, ND_DTYPE, ND_OFFSET, ND_NP, ND_AG, ND_GRAD
cdef Py_ssize_t CH_VAR, CH_CTX, CH_NBYTES, CH_HANDLE, CH_ENGINE
cdef Py_ssize_t PL_SINGLE, PL_NBYTES, PL_KERNEL, PL_KDEV, PL_KSEEN, PL_REQ, PL_SMALL, PL_SIMPLE, PL_UFUNC
cdef Py_ssize_t PL_LOOP
cdef Py_ssize_t CX_TYPEID
cdef Py_ssize_t HD_BUFFER, HD_POOL

IMPLEMENTATION = "cython"

cdef object _imp = None            # mxref.ndarray.imperative (read for _record_hook, _state)
cdef object _engine_mod = None
cdef object NDArray = None
cdef object Chunk = None
cdef object Handle = None          # mxref.storage.handle.Handle (its buffer and pool, by offset)
cdef object OpContext = None
cdef object MXNetError = None
cdef object _plan = None
cdef object _kernel = None
cdef object check_out = None
cdef object current_context = None
cdef object _resource = None
cdef object _storage_dispatch = None
cdef object _KERNELS = None
cdef object _state = None
cdef object _NORMAL = None
cdef dict _infer_cache = None
cdef object _managers = None       # mxref.storage.manager (its ``_last`` pair: the last pool asked)
cdef object _storage_mod = None    # mxref.storage (its ``alloc``, checked for a replacement)
cdef object _storage_alloc = None  # ``storage.alloc`` as bound (a spy or a hook replaces it)
# The last OpContext without resources, reused while the run context, context and mode are the
# same (the idle run passes one RunContext per context): see ``imperative._op_context``.
cdef object _octx = None
# Module globals read on every call come from the modules' dicts: ``module.name`` goes through the
# module type's attribute lookup (~80 ns); the dict's own lookup is a third of that and sees every
# rebinding (a spy, ``use_compiled``, an engine switch) just the same.
cdef dict _imp_ns = None           # mxref.ndarray.imperative.__dict__
cdef dict _engine_ns = None        # mxref.engine.__dict__ (its ``_engine``)
cdef dict _storage_ns = None       # mxref.storage.__dict__ (its ``alloc``)
cdef dict _managers_ns = None      # mxref.storage.manager.__dict__ (its ``_last``)
cdef dict _prof_ns = None          # the profiler state's __dict__ (its ``recording``)
cdef object _compiled_lend = _storage_core.lend


# The engine's methods called per op (``new_variable``, ``push_sync``, ``delete_storage``) are
# instance attributes of ThreadedEnginePerDevice (the class itself, the idle runner's methods):
# read from the engine's dict, found through one tuple (engine, its __dict__) replaced whole, so
# a thread that reads it never pairs one engine with another's dict.
cdef tuple _eng_ns = (None, None)


cdef inline object _eng_attr(object eng, str name):
    """``eng.<name>``: the instance's own attribute from its dict, else the ordinary lookup."""
    global _eng_ns
    cdef tuple pair = _eng_ns
    if pair[0] is not eng:
        pair = (eng, getattr(eng, "__dict__", None))
        _eng_ns = pair
    ns = pair[1]
    if ns is not None:
        f = (<dict>ns).get(name)
        if f is not None:
            return f
    return getattr(eng, name)


# The idle runner's ``push_sync`` and ``delete_storage`` (the functions the engine's bound methods
# wrap): when the engine's attribute is one of them, bound to an ``IdleRunner``, the call goes to
# its C entry (``_push_sync`` / ``_delete``, engine_core.pxd) and skips parsing the arguments of a
# Python call. Any other callable there (the naive engine, a spy, the pure-Python runner) is called.
cdef object _runner_push = IdleRunner.__dict__["push_sync"]
cdef object _runner_delete = IdleRunner.__dict__["delete_storage"]


cdef inline object _runner_of(object method, object func):
    """The IdleRunner ``method`` is ``func`` bound to, else ``None``."""
    if type(method) is MethodType and PyMethod_GET_FUNCTION(method) == <PyObject*>func:
        runner = <object>PyMethod_GET_SELF(method)
        if type(runner) is IdleRunner:
            return runner
    return None


cdef int _push_sync(object eng, KernelCall run, object ctx, tuple const_vars, tuple mutable_vars,
                    object name) except -1:
    """``eng.push_sync(run, ctx, const_vars, mutable_vars, NORMAL, 0, name)``."""
    push = _eng_attr(eng, "push_sync")
    runner = _runner_of(push, _runner_push)
    if runner is not None:
        return (<IdleRunner>runner)._push_sync(run, ctx, const_vars, mutable_vars, 0, 0, name)
    push(run, ctx, const_vars, mutable_vars, _NORMAL, 0, name)
    return 0


cdef inline bint _is_train():
    """``imperative.is_training()``: the thread-local flag, read only while a thread has it set."""
    return _imp_ns["_num_training"] != 0 and _state.is_train


def bind(imperative) -> None:
    """Take the imperative module's helpers and state (called once, at its import)."""
    global _imp, _engine_mod, NDArray, Chunk, OpContext, MXNetError, _plan, _kernel, check_out
    global current_context, _resource, _storage_dispatch, _KERNELS, _state, _NORMAL, _infer_cache
    global _managers, _storage_mod, _storage_alloc, _imp_ns, _engine_ns
    _imp = imperative
    _imp_ns = imperative.__dict__
    _engine_ns = imperative._engine_mod.__dict__
    _engine_mod = imperative._engine_mod
    NDArray = imperative.NDArray
    Chunk = imperative.Chunk
    OpContext = imperative.OpContext
    MXNetError = imperative.MXNetError
    _plan = imperative._plan
    _kernel = imperative._kernel
    check_out = imperative.check_out
    current_context = imperative.current_context
    _resource = imperative._resource
    _storage_dispatch = imperative._storage_dispatch
    _KERNELS = imperative._KERNELS
    _state = imperative._state
    _NORMAL = imperative._NORMAL
    _infer_cache = imperative._infer_cache
    global ND_CHUNK, ND_SHAPE, ND_DTYPE, ND_OFFSET, ND_NP, ND_AG, ND_GRAD
    global CH_VAR, CH_CTX, CH_NBYTES, CH_HANDLE, CH_ENGINE
    global PL_SINGLE, PL_NBYTES, PL_KERNEL, PL_KDEV, PL_KSEEN, PL_REQ, PL_SMALL, PL_SIMPLE, PL_UFUNC, PL_LOOP
    global CX_TYPEID
    ND_CHUNK, ND_SHAPE, ND_DTYPE = _slot(NDArray, "_chunk"), _slot(NDArray, "_shape"), _slot(NDArray, "_dtype")
    ND_OFFSET, ND_NP = _slot(NDArray, "_offset"), _slot(NDArray, "_np")
    ND_AG, ND_GRAD = _slot(NDArray, "_ag"), _slot(NDArray, "_grad")
    CH_VAR, CH_CTX, CH_NBYTES = _slot(Chunk, "var"), _slot(Chunk, "ctx"), _slot(Chunk, "nbytes")
    CH_HANDLE, CH_ENGINE = _slot(Chunk, "handle"), _slot(Chunk, "engine")
    plan_cls = imperative._Plan
    PL_SINGLE, PL_NBYTES = _slot(plan_cls, "single"), _slot(plan_cls, "out_nbytes")
    PL_KERNEL, PL_KDEV, PL_KSEEN = _slot(plan_cls, "kernel"), _slot(plan_cls, "kernel_dev"), _slot(plan_cls, "kernels_seen")
    PL_REQ, PL_SMALL, PL_SIMPLE = _slot(plan_cls, "req"), _slot(plan_cls, "small"), _slot(plan_cls, "simple")
    PL_UFUNC, PL_LOOP = _slot(plan_cls, "ufunc"), _slot(plan_cls, "loop")
    CX_TYPEID = _slot(type(imperative.current_context()), "device_typeid")
    from ..storage import manager
    from ..storage.handle import Handle as handle_cls
    from .. import profiler, storage
    global Handle, HD_BUFFER, HD_POOL
    Handle = handle_cls
    HD_BUFFER, HD_POOL = _slot(Handle, "buffer"), _slot(Handle, "_pool")
    _managers = manager
    _storage_mod = storage
    _storage_alloc = storage.alloc
    global _storage_ns, _managers_ns, _prof_ns
    _prof_ns = profiler._state.__dict__
    _storage_ns = storage.__dict__
    _managers_ns = manager.__dict__


cdef int _lend_to(object chunk) except -1:
    """Give a fresh host chunk its memory with the pool's one-call hit (``storage_core.lend``) for
    the pool ``storage.get_manager`` gave last, when that applies; otherwise leave it for
    ``NDArray._data`` (a pool miss, another context, the profiler recording, a replaced
    ``storage.alloc``)."""
    cdef object last, mgr, handle
    if _prof_ns["recording"] or _storage_ns["alloc"] is not _storage_alloc:
        return 0
    last = _managers_ns["_last"]
    mgr = (<tuple>last)[1]
    if (<tuple>last)[0] is _get(chunk, CH_CTX) and mgr is not None:
        lend = _instance_dict(mgr)["_lend"]
        if lend is _compiled_lend:          # the pool's compiled hit: called as C
            handle = lend_hit(mgr, _get(chunk, CH_NBYTES))
        else:
            handle = lend(mgr, _get(chunk, CH_NBYTES))
        if handle is not None:
            # ``Chunk.data`` allocates under a lock; here a second check does: ``lend`` may
            # collect garbage (Python code, a thread switch), and two readers of one fresh
            # chunk on two workers may both get here. The first handle set wins.
            if _get(chunk, CH_HANDLE) is None:
                _put(chunk, CH_HANDLE, handle)
            else:
                mgr._give_back(mgr, handle)
    return 0


cdef object _data_of(object x):
    """``x._data()`` (the numpy view of an array's memory), with the first allocation of a fresh
    host array done here in C calls (``_lend_to``), then the view. Anything else (device memory,
    a subclass, a pool miss) takes ``x._data()``, the readable path."""
    cdef object chunk, handle, buf, view
    if type(x) is not NDArray:
        return x._data()
    chunk = _get(x, ND_CHUNK)
    if _get(chunk, CH_HANDLE) is None:
        _lend_to(chunk)
    handle = _get(chunk, CH_HANDLE)
    if handle is not None:
        buf = _get(handle, HD_BUFFER) if type(handle) is Handle else handle.buffer
        view = _view_of(buf, _get(x, ND_SHAPE), _get(x, ND_DTYPE), _get(x, ND_OFFSET))
        if view is not None:        # what ``NDArray._data`` makes and caches, made in C
            _put(x, ND_NP, view)
            return view
    return x._data()


cdef inline object _view(object x):
    """``x._data()``: the cached view (``NDArray._data``'s first line), else ``_data_of``."""
    d = _get(x, ND_NP) if type(x) is NDArray else x._np
    return _data_of(x) if d is None else d


cdef class KernelCall(SyncFn):
    """The function ``invoke`` pushes (``imperative._KernelCall``'s twin): calls the kernel on the
    arrays' memory; ``arrays`` holds the inputs, then the outputs, and is dropped once run.
    The engine's idle run calls ``run`` directly (``engine_core.SyncFn``); a worker thread calls
    the object, which calls ``run``."""

    cdef public object arrays, kernel, ctx, resources, params, req
    cdef public object ufunc            # the plan's ufunc, called directly (``_KernelCall``)
    cdef public object loop             # its inner loop, called directly (``UfuncLoop``), or None
    cdef public Py_ssize_t n_in
    cdef public bint is_train
    # ``may_run_inline`` (SyncFn's field): a kernel never blocks on another thread, so the engine
    # may run a small one on the pushing thread (``imperative.INLINE_MAX_BYTES``); ``invoke``
    # sets it from the plan.

    def __init__(self, arrays, Py_ssize_t n_in, kernel, bint is_train, ctx, resources, params, req):
        self.arrays = arrays
        self.n_in = n_in
        self.kernel = kernel
        self.is_train = is_train
        self.ctx = ctx
        self.resources = resources
        self.params = params
        self.req = req

    cdef object run(self, object run_ctx):
        global _octx
        cdef list arrays = self.arrays
        cdef Py_ssize_t n = self.n_in, m = len(arrays), i
        cdef object d, x
        self.arrays = None
        if self.loop is not None and run_loop(<UfuncLoop>self.loop, arrays):
            return None
        if self.ufunc is not None and m == 3:     # a binary ufunc: no lists to build
            self.ufunc(_view(arrays[0]), _view(arrays[1]), _view(arrays[2]))
            return None
        cdef list ins = PyList_New(n)
        cdef list outs = PyList_New(m - n)
        for i in range(m):
            x = arrays[i]
            d = _view(x)
            Py_INCREF(d)
            if i < n:
                PyList_SET_ITEM(ins, i, d)
            else:
                PyList_SET_ITEM(outs, i - n, d)
        if self.ufunc is not None:
            self.ufunc(*ins, *outs)
            return None
        octx = _octx
        if (self.resources or octx is None or octx.run_ctx is not run_ctx or octx.ctx is not self.ctx
                or octx.is_train is not self.is_train):
            octx = OpContext(self.is_train, self.ctx, self.resources, run_ctx)
            if not self.resources:
                _octx = octx
        self.kernel(octx, self.params, ins, outs, self.req)
        return None


def invoke(op, pkey, params, inputs, out=None, ctx=None, req=None):
    """``imperative.invoke`` compiled: push ``op`` on ``inputs``, return all its outputs."""
    return _invoke(op, pkey, params, inputs, out, ctx, req)


cdef object _invoke(op, pkey, params, inputs, out, ctx, req):
    cdef bint sparse = False
    cdef Py_ssize_t n_in = len(inputs), i
    cdef object x, plan, single, eng, var, outputs, mutable_vars, const_vars, resources, kernel
    # The short path: one or two dense inputs, a cached plan marked ``simple``, no ``req=``.
    if pkey is not None and req is None and (out is None or type(out) is NDArray):
        plan = None
        if n_in == 1:
            x = inputs[0]
            if type(x) is NDArray:
                plan = _infer_cache.get((pkey, _get(x, ND_SHAPE), _get(x, ND_DTYPE)))
        elif n_in == 2:
            x, y = inputs[0], inputs[1]
            if type(x) is NDArray and type(y) is NDArray:
                plan = _infer_cache.get((pkey, _get(x, ND_SHAPE), _get(x, ND_DTYPE),
                                         _get(y, ND_SHAPE), _get(y, ND_DTYPE)))
        if plan is not None and _get(plan, PL_SIMPLE) is True:
            outputs = _invoke_simple(op, plan, params, inputs, n_in, out)
            if outputs is not None:
                return outputs
    if op.sparse_from_dense or (out is not None and type(out) is not NDArray):
        sparse = True
    else:
        for i in range(n_in):
            if inputs[i]._sparse:
                sparse = True
                break
    if sparse:
        result = _storage_dispatch.invoke(op, params, inputs, out, ctx) \
            if _storage_dispatch.wanted(op, inputs, out) else None
        if result is not None:
            return result
    # ``_plan``'s cache hit for the usual arities, inline (same keys); anything else is _plan's.
    plan = None
    if pkey is not None:
        if n_in == 1:
            x = inputs[0]
            plan = _infer_cache.get((pkey, x._shape, x._dtype))
        elif n_in == 2:
            x, y = inputs[0], inputs[1]
            plan = _infer_cache.get((pkey, x._shape, x._dtype, y._shape, y._dtype))
    if plan is None:
        plan = _plan(op, pkey, params, inputs)
    if n_in:
        ctx = inputs[0]._chunk.ctx
        for i in range(n_in):
            x = inputs[i]._chunk.ctx
            if x is not ctx and x != ctx:
                raise MXNetError(f"operator {op.name}: all inputs must be on one context, got "
                                 f"{[str(y.context) for y in inputs]}")
    elif ctx is None:
        ctx = current_context()
    if op.output_ctx is not None:
        ctx = op.output_ctx(params)
    eng = _engine_ns["_engine"] or _engine_mod.get()
    single = plan.single
    if out is None:
        if single is not None:
            var = _eng_attr(eng, "new_variable")()
            outputs = [NDArray(Chunk(plan.out_nbytes[0], ctx, var), single[0], single[1], 0)]
            mutable_vars = (var,)
        else:
            new_var = eng.new_variable
            outputs = [NDArray(Chunk(nb, ctx, new_var()), s, t, 0)
                       for s, t, nb in zip(plan.out_shapes, plan.out_dtypes, plan.out_nbytes)]
            mutable_vars = tuple([o._chunk.var for o in outputs])
    elif (single is not None and type(out) is NDArray and out._shape == single[0]
          and out._dtype == single[1] and out._chunk.ctx is ctx):
        outputs = [out]
        mutable_vars = (out._chunk.var,)
    else:
        outputs = check_out(op, out, plan.out_shapes, plan.out_dtypes, plan.num_visible, ctx)
        mutable_vars = tuple([o._chunk.var for o in outputs])
    if n_in == 1:
        const_vars = (inputs[0]._chunk.var,)
    elif n_in == 2:
        const_vars = (inputs[0]._chunk.var, inputs[1]._chunk.var)
    else:
        const_vars = tuple([y._chunk.var for y in inputs])
    if plan.mutate:
        mutable_vars += tuple([inputs[j]._chunk.var for j in plan.mutate])
    resources = ()
    if op.resources:
        resources = [_resource.request(ctx, kind) for kind in op.resources]
        mutable_vars += tuple([r.var for r in resources])
    kernel = plan.kernel
    if plan.kernel_dev != ctx.device_typeid or plan.kernels_seen != len(_KERNELS):
        kernel = _kernel(op, plan, ctx)
    if req is None:
        req = plan.req
    else:
        _imp.check_req(op, req, outputs)
    cdef KernelCall run = KernelCall([*inputs, *outputs], n_in, kernel, _is_train(), ctx, resources,
                                     params, req)
    run.ufunc = _get(plan, PL_UFUNC) if req is _get(plan, PL_REQ) else None
    run.may_run_inline = plan.small
    _push_sync(eng, run, ctx, const_vars, mutable_vars, op.name)
    hook = _imp_ns["_record_hook"]
    if hook is not None:
        hook(op, params, inputs, outputs)
    return outputs


cdef object _invoke_simple(op, plan, params, inputs, Py_ssize_t n_in, out):
    """``_invoke``'s steps for a ``simple`` plan and dense inputs, fields read by offset and the
    output's Chunk and NDArray filled in directly (what their ``__init__``s do); ``None`` when
    the inputs are on two contexts or ``out`` does not fit the plan, for the general path to
    check and report."""
    cdef object x = inputs[0], cx = _get(x, ND_CHUNK), ctx = _get(cx, CH_CTX), y, cy, c2
    cdef tuple single = <tuple>_get(plan, PL_SINGLE)
    cdef object eng, var, chunk, result, kernel, hook
    cdef tuple const_vars, mutable_vars
    cdef KernelCall run
    if n_in == 2:
        y = inputs[1]
        cy = _get(y, ND_CHUNK)
        c2 = _get(cy, CH_CTX)
        if c2 is not ctx and c2 != ctx:
            return None                 # two contexts: the general path reports it
        const_vars = (_get(cx, CH_VAR), _get(cy, CH_VAR))
    else:
        const_vars = (_get(cx, CH_VAR),)
    if out is not None:
        chunk = _get(out, ND_CHUNK)
        # Identity first: ``a += 1`` hands back the very shape and dtype the plan was made from,
        # and a dtype's ``!=`` is numpy's rich comparison (~250 instructions).
        shape, dtype = _get(out, ND_SHAPE), _get(out, ND_DTYPE)
        if ((shape is not single[0] and shape != single[0])
                or (dtype is not single[1] and dtype != single[1]) or _get(chunk, CH_CTX) is not ctx):
            return None
        result = out
        mutable_vars = (_get(chunk, CH_VAR),)
    eng = _engine_ns["_engine"]
    if eng is None:
        eng = _engine_mod.get()
    if out is None:
        var = _eng_attr(eng, "new_variable")()
        chunk = PyType_GenericAlloc(Chunk, 0)          # Chunk(nbytes, ctx, var)
        _put(chunk, CH_VAR, var)
        _put(chunk, CH_CTX, ctx)
        _put(chunk, CH_NBYTES, (<list>_get(plan, PL_NBYTES))[0])
        _put(chunk, CH_HANDLE, None)
        _put(chunk, CH_ENGINE, eng)
        result = PyType_GenericAlloc(NDArray, 0)       # NDArray(chunk, shape, dtype, 0)
        _put(result, ND_CHUNK, chunk)
        _put(result, ND_SHAPE, single[0])
        _put(result, ND_DTYPE, single[1])
        _put(result, ND_OFFSET, 0)
        _put(result, ND_NP, None)
        _put(result, ND_AG, None)
        _put(result, ND_GRAD, None)
        mutable_vars = (var,)
    kernel = _get(plan, PL_KERNEL)
    if _get(plan, PL_KDEV) != _get(ctx, CX_TYPEID) or _get(plan, PL_KSEEN) != len(_KERNELS):
        kernel = _kernel(op, plan, ctx)
    run = KernelCall.__new__(KernelCall)
    run.arrays = [x, result] if n_in == 1 else [x, y, result]
    run.n_in = n_in
    run.kernel = kernel
    run.is_train = _is_train()
    run.ctx = ctx
    run.resources = ()
    run.params = params
    run.req = _get(plan, PL_REQ)
    run.ufunc = _get(plan, PL_UFUNC)
    loop = _get(plan, PL_LOOP)
    if loop is None:
        loop = _plan_loop(plan, kernel, params, _get(x, ND_DTYPE), single)
    if loop is not False:
        run.loop = loop
    run.may_run_inline = _get(plan, PL_SMALL) is True
    outputs = [result]
    _push_sync(eng, run, ctx, const_vars, mutable_vars, op.name)
    hook = _imp_ns["_record_hook"]
    if hook is not None:
        hook(op, params, inputs, outputs)
    return outputs


cdef object _plan_loop(object plan, object kernel, object params, object dtype, tuple single):
    """The ``UfuncLoop`` for a simple plan's kernel, kept on the plan (``False``: none; the plan's
    kernel changing resets it, ``imperative._kernel``): the plan's ufunc on same-dtype operands, or
    a scalar op's ufunc (its kernel's ``scalar_ufunc``: the ufunc and the scalar's position) with
    the scalar of ``params``."""
    cdef object loop = None
    cdef Py_ssize_t size
    if _get(plan, PL_REQ) == ("write",) and single[1] == dtype and dtype.itemsize:
        size = (<list>_get(plan, PL_NBYTES))[0] // dtype.itemsize
        ufunc = _get(plan, PL_UFUNC)
        scalar_op = getattr(kernel, "scalar_ufunc", None)
        if ufunc is not None:
            loop = loop_for(ufunc, dtype, size, -1, None)
        elif scalar_op is not None and "scalar" in params:
            loop = loop_for(scalar_op[0], dtype, size, scalar_op[1], params["scalar"])
    if loop is None:
        loop = False
    _put(plan, PL_LOOP, loop)
    return loop


# ---------------------------------------------------------------------------------------------
# NDArray's arithmetic methods, compiled: ``a + b`` without the three Python frames of
# ``NDArray.__add__`` -> ``_binary`` -> ``invoke_default``. ``install`` puts them on the class;
# each does what ``NDArray._binary`` / ``_scalar_only`` do (the readable twins, in ndarray.py) and
# hands over to them whenever the compiled ``invoke`` is not the selected one (plain paths, the
# pure-Python tuned invoke), so the switches of ``imperative.py`` keep their meaning.
# ---------------------------------------------------------------------------------------------

cdef object _numeric_types = None
cdef dict _default_cache = None
cdef dict _scalar_cache = None
cdef object _py_binary = None, _py_scalar_only = None
cdef object _compiled_invoke = invoke
cdef dict _replaced = None          # what ``install`` replaced (set once)


cdef object _binary(self, other, elem, bcast, scalar, out):
    cdef tuple entry
    if _imp_ns["invoke"] is not _compiled_invoke:
        return _py_binary(self, other, elem, bcast, scalar, out)
    if isinstance(other, NDArray):
        if type(other) is NDArray and type(self) is NDArray:
            same = _get(other, ND_SHAPE) == _get(self, ND_SHAPE)
        else:
            same = other._shape == self._shape
        name = elem if elem is not None and same else bcast
        entry = _default_cache.get(name)
        if entry is None:               # the first call: invoke_default fills the cache
            return _imp.invoke_default(name, [self, other], out)[0]
        return _invoke(entry[0], name, entry[1], [self, other], out, None, None)[0]
    if isinstance(other, _numeric_types):
        key = (scalar, type(other), other)
        entry = _scalar_cache.get(key)
        if entry is None:
            return _imp.invoke_scalar(scalar, self, other, out)[0]
        return _invoke(entry[0], key, entry[1], [self], out, None, None)[0]
    return NotImplemented


cdef object _scalar_only(self, other, scalar):
    if _imp_ns["invoke"] is not _compiled_invoke or not isinstance(other, _numeric_types):
        return _py_scalar_only(self, other, scalar)
    key = (scalar, type(other), other)
    entry = _scalar_cache.get(key)
    if entry is None:
        return _imp.invoke_scalar(scalar, self, other)[0]
    return _invoke(entry[0], key, entry[1], [self], None, None, None)[0]


def _add(self, o):
    return _binary(self, o, "elemwise_add", "broadcast_add", "_plus_scalar", None)


def _iadd(self, o):
    return _binary(self, o, "elemwise_add", "broadcast_add", "_plus_scalar", self)


def _sub(self, o):
    return _binary(self, o, "elemwise_sub", "broadcast_sub", "_minus_scalar", None)


def _rsub(self, o):
    return _scalar_only(self, o, "_rminus_scalar")


def _isub(self, o):
    return _binary(self, o, "elemwise_sub", "broadcast_sub", "_minus_scalar", self)


def _mul(self, o):
    return _binary(self, o, "elemwise_mul", "broadcast_mul", "_mul_scalar", None)


def _imul(self, o):
    return _binary(self, o, "elemwise_mul", "broadcast_mul", "_mul_scalar", self)


def _truediv(self, o):
    return _binary(self, o, "elemwise_div", "broadcast_div", "_div_scalar", None)


def _rtruediv(self, o):
    return _scalar_only(self, o, "_rdiv_scalar")


def _itruediv(self, o):
    return _binary(self, o, "elemwise_div", "broadcast_div", "_div_scalar", self)


# Method name -> compiled function; the twins are the methods of the same names in ndarray.py.
METHODS = {"__add__": _add, "__radd__": _add, "__iadd__": _iadd, "__sub__": _sub, "__rsub__": _rsub,
           "__isub__": _isub, "__mul__": _mul, "__rmul__": _mul, "__imul__": _imul,
           "__truediv__": _truediv, "__rtruediv__": _rtruediv, "__itruediv__": _itruediv,
           "__div__": _truediv, "__rdiv__": _rtruediv, "__idiv__": _itruediv}


def install(cls, numeric_types) -> dict:
    """Put the compiled arithmetic methods on ``cls`` (NDArray) and the compiled ``__del__`` on
    Chunk; return the Python ones replaced (by name; ``"Chunk.__del__"`` for the last). A second
    call changes nothing and returns the same dict."""
    global _numeric_types, _replaced, _default_cache, _scalar_cache, _py_binary, _py_scalar_only
    if _replaced is not None:
        return _replaced
    _numeric_types = numeric_types
    _default_cache = _imp._default_cache
    _scalar_cache = _imp._scalar_cache
    _py_binary = cls._binary
    _py_scalar_only = cls._scalar_only
    replaced = {}
    for name, fn in METHODS.items():
        replaced[name] = cls.__dict__[name]
        setattr(cls, name, fn)
    global _py_chunk_del
    _py_chunk_del = Chunk.__dict__["__del__"]
    replaced["Chunk.__del__"] = _py_chunk_del
    Chunk.__del__ = _chunk_del
    _replaced = replaced
    return replaced


# ---------------------------------------------------------------------------------------------
# Chunk's release, compiled: ``Chunk.__del__`` (chunk.py, the readable twin) with its fields read
# by offset, installed on the class by ``install``. Runs on whatever thread drops the last
# reference, and at interpreter shutdown: it never raises.
# ---------------------------------------------------------------------------------------------

cdef object _py_chunk_del = None


def _chunk_del(self):
    if type(self) is not Chunk:         # a subclass (operator.py's borrowed chunk): its own rules
        _py_chunk_del(self)
        return
    try:
        handle = _get(self, CH_HANDLE)
        eng = _engine_ns["_engine"]
        if handle is not None and (_get(handle, HD_POOL) if type(handle) is Handle else handle._pool) is None:
            handle = None               # foreign memory (from_numpy, from_dlpack): its owner frees it
        if eng is not _get(self, CH_ENGINE) or eng is None:
            # The engine was switched (and drained) since this chunk was made (chunk.py says why).
            if handle is not None:
                _storage_mod.free(handle)
            return
        delete = _eng_attr(eng, "delete_storage")
        runner = _runner_of(delete, _runner_delete)
        if runner is not None:
            (<IdleRunner>runner)._delete(handle, _get(self, CH_CTX), _get(self, CH_VAR))
        else:
            delete(handle, _get(self, CH_CTX), _get(self, CH_VAR))
    except Exception:  # noqa: BLE001
        pass
