# cython: language_level=3, boundscheck=False, wraparound=False
"""Cython twin of the tuned ``imperative.invoke`` and its ``_KernelCall``: the same steps, compiled.

The pure-Python twin, ``mxref/ndarray/imperative.py``, is the readable form of this file and the
one that runs in pure mode; ``invoke_plain.py`` stays the specification of both. This copy does
the same steps in the same order with the same objects (results are bit-identical, and
``tests/test_plain_paths.py`` compares the three on the op test cases); only the interpreter's
work per step is gone: local variables are C variables, the usual arities are C branches, and
``KernelCall`` is an extension type. ``bind`` hands it the imperative module's caches and hooks
once, at import.
"""
cimport cython
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF

IMPLEMENTATION = "cython"

cdef object _imp = None            # mxref.ndarray.imperative (read for _record_hook, _state)
cdef object _engine_mod = None
cdef object NDArray = None
cdef object Chunk = None
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
# The last OpContext without resources, reused while the run context, context and mode are the
# same (the idle run passes one RunContext per context): see ``imperative._op_context``.
cdef object _octx = None


def bind(imperative) -> None:
    """Take the imperative module's helpers and state (called once, at its import)."""
    global _imp, _engine_mod, NDArray, Chunk, OpContext, MXNetError, _plan, _kernel, check_out
    global current_context, _resource, _storage_dispatch, _KERNELS, _state, _NORMAL, _infer_cache
    _imp = imperative
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


@cython.freelist(256)
cdef class KernelCall:
    """The function ``invoke`` pushes (``imperative._KernelCall``'s twin): calls the kernel on the
    arrays' memory; ``arrays`` holds the inputs, then the outputs, and is dropped once run."""

    cdef public object arrays, kernel, ctx, resources, params, req
    cdef public Py_ssize_t n_in
    cdef public bint is_train
    # A kernel never blocks on another thread: the engine may run a small one on the pushing
    # thread (``imperative.INLINE_MAX_BYTES``); ``invoke`` sets it from the plan.
    cdef public bint may_run_inline

    def __init__(self, arrays, Py_ssize_t n_in, kernel, bint is_train, ctx, resources, params, req):
        self.arrays = arrays
        self.n_in = n_in
        self.kernel = kernel
        self.is_train = is_train
        self.ctx = ctx
        self.resources = resources
        self.params = params
        self.req = req

    def __call__(self, run_ctx):
        global _octx
        cdef list arrays = self.arrays
        cdef Py_ssize_t n = self.n_in, m = len(arrays), i
        cdef list ins = PyList_New(n)
        cdef list outs = PyList_New(m - n)
        cdef object d, x
        self.arrays = None
        for i in range(m):
            x = arrays[i]
            d = x._np                   # the cached view (``NDArray._data``'s first line)
            if d is None:
                d = x._data()
            Py_INCREF(d)
            if i < n:
                PyList_SET_ITEM(ins, i, d)
            else:
                PyList_SET_ITEM(outs, i - n, d)
        octx = _octx
        if (self.resources or octx is None or octx.run_ctx is not run_ctx or octx.ctx is not self.ctx
                or octx.is_train is not self.is_train):
            octx = OpContext(self.is_train, self.ctx, self.resources, run_ctx)
            if not self.resources:
                _octx = octx
        self.kernel(octx, self.params, ins, outs, self.req)


def invoke(op, pkey, params, inputs, out=None, ctx=None, req=None):
    """``imperative.invoke`` compiled: push ``op`` on ``inputs``, return all its outputs."""
    cdef bint sparse = False
    cdef Py_ssize_t n_in = len(inputs), i
    cdef object x, plan, single, eng, var, outputs, mutable_vars, const_vars, resources, kernel
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
    eng = _engine_mod._engine or _engine_mod.get()
    single = plan.single
    if out is None:
        if single is not None:
            var = eng.new_variable()
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
    run = KernelCall([*inputs, *outputs], n_in, kernel, _state.is_train, ctx, resources, params, req)
    run.may_run_inline = plan.small
    eng.push_sync(run, ctx, const_vars, mutable_vars, _NORMAL, 0, op.name)
    hook = _imp._record_hook
    if hook is not None:
        hook(op, params, inputs, outputs)
    return outputs
