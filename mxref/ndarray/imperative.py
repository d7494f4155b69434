"""Imperative dispatch: run one registered operator on NDArrays by pushing it to the engine.

``invoke`` is the path every ``mx.nd`` call takes (MXNet's ``Imperative::Invoke``):

1. parse the keyword arguments into typed parameters,
2. infer output shapes and dtypes at call time, so shape errors raise here,
3. make the outputs: new NDArrays whose memory is *not* allocated yet, or the ``out=`` arrays,
4. push one engine operation reading the inputs' variables and writing the outputs' variables
   (plus the variables of the op's resources and of any auxiliary inputs it mutates),
   (sparse inputs or outputs first take ``storage_dispatch.invoke``: a sparse kernel, or the
   dense kernel after a logged fallback),
5. inside that operation, on the worker: allocate the outputs on first write, take numpy views,
   and call the kernel ``(octx, params, inputs, outputs, req)``, which ``registry.get_kernel(op,
   device)`` resolved before the push (the tuned invoke keeps it on the plan of step 2 until the
   kernel table changes: a kernel registered, or the switch flipped),
6. hand the call to autograd's recorder, if one is installed.

Errors raised by the kernel are stored by the engine and raised at the next wait.

Two implementations of these steps exist. ``invoke_plain.py`` does them one by one, in about
40 lines: read it first, it is the specification. This module holds the tuned one, which does the
same steps and gives bit-identical results, with three tricks added because an ``mx.nd`` call on
small arrays costs more in Python than in its kernel:

- *caches* (steps 1, 2, 5): parsed parameters per distinct call (``parse_params``), output
  shapes/dtypes/sizes per (op, parameters, input shapes, dtypes) in a ``_Plan`` (``_plan``), and
  the kernel on the plan until the kernel table changes (``_kernel``); the short paths
  ``invoke_default`` (``a + b``) and ``invoke_scalar`` (``a + 1``) keep parsed parameters too;
- *few, small objects* (steps 3, 4): everything an op pushes lives until it has run, i.e. across
  garbage collections while ops queue up, so the variable lists are tuples spelled out for the
  usual arities and the pushed function is one ``_KernelCall`` with ``__slots__`` instead of a
  closure over lists;
- *early release* (step 5): ``_KernelCall`` drops its arrays once run, so their memory may be
  freed even while the engine keeps the finished operation object around.

The tuned ``invoke`` and ``_KernelCall`` are also compiled: ``mxref/_ext/dispatch_core.pyx`` is
their Cython twin (the same steps and objects), used when built and not in pure mode;
``use_compiled(False)`` selects the Python ones here.

Which one ``invoke`` (and ``parse_params``, ``invoke_name``, ``invoke_default``,
``invoke_scalar``) is, is chosen once, at import, and by ``use_plain``: ``MXREF_PLAIN_PATHS=1``
picks the plain paths, ``0`` the tuned ones; unset, pure mode (``MXREF_ENABLE_EXT=0``) picks the
plain ones. Code outside this module must call them as ``imperative.invoke(...)``, never bind
them with ``from .imperative import invoke``, or it would miss the switch.
"""
from __future__ import annotations

import math
import os
import sys
import threading
from typing import Callable, List, Optional, Sequence

from .. import engine as _engine_mod
from .. import resource as _resource
from .._ext import loader as _loader
from .._ext import switch as _switch
from ..base import MXNetError, env_int
from ..context import Context, current_context
from ..engine.base import FnProperty
from ..ops import registry
from ..ops.registry import OpContext, OpDef
from .chunk import Chunk
from .ndarray import NDArray

__all__ = ["invoke", "invoke_name", "invoke_default", "invoke_scalar", "parse_params", "infer_outputs",
           "check_out", "is_training", "set_is_training", "set_record_hook", "use_plain", "is_plain",
           "plain_paths", "selected_paths", "use_compiled"]

_OPS = registry._OPS      # name -> OpDef; read directly to keep the per-call lookup to one dict access
_KERNELS = registry._KERNELS
_CACHE_LIMIT = 4096       # distinct (op, params, shapes) entries kept before the caches are reset

_params_cache: dict = {}  # (op name, kwargs key) -> parsed params
_infer_cache: dict = {}   # (params key, input shapes, input dtypes) -> _Plan
_NORMAL = FnProperty.NORMAL
_WRITE = {n: ("write",) * n for n in range(8)}

# ---------------------------------------------------------------------------------------------
# Hooks for autograd: the training flag kernels see, and a recorder called after each invoke.
# ---------------------------------------------------------------------------------------------
class _ThreadState(threading.local):
    # A class-level default: a missing thread-local attribute would cost an exception per call.
    is_train = False


_state = _ThreadState()
_record_hook: Optional[Callable] = None
# Threads whose training flag is set now. While none is, every thread's flag is False and a call
# skips the thread-local read (~0.15 µs: ``threading.local`` finds the thread's dict each time).
# NOTE: a thread that ends in training mode leaves the count raised: calls then read the flag,
# which is still right, only slower.
_num_training = 0
_training_lock = threading.Lock()


def is_training() -> bool:
    """Whether operators run in training mode on this thread (``OpContext.is_train``)."""
    return _num_training != 0 and _state.is_train


def set_is_training(flag: bool) -> bool:
    """Set this thread's training flag and return the previous one (``autograd.train_mode`` uses it)."""
    global _num_training
    old = _state.is_train
    new = bool(flag)
    if new != old:
        with _training_lock:
            _num_training += 1 if new else -1
    _state.is_train = new
    return old


def set_record_hook(hook: Optional[Callable]) -> Optional[Callable]:
    """Install ``hook(op, params, inputs, outputs)``, called after every invoke; return the old one.

    ``mxref.autograd`` installs it while recording; ``None`` (the default) costs one check per call.
    """
    global _record_hook
    old, _record_hook = _record_hook, hook
    return old


# ---------------------------------------------------------------------------------------------
# Parameters and the per-call plan (both cached: imperative code repeats the same calls)
# ---------------------------------------------------------------------------------------------

def parse_params(op: OpDef, kwargs: dict):
    """``(key, params)``: typed parameters and a hashable key naming them (``None`` if unhashable)."""
    if not kwargs:
        key = op.name
    else:
        # Types are part of the key: 1, 1.0 and True hash alike but may parse differently.
        key = (op.name, tuple(kwargs.items()), tuple(map(type, kwargs.values())))
    try:
        params = _params_cache.get(key)
    except TypeError:         # an unhashable value (a list, an array): parse without caching
        return None, op.parse_params(kwargs)
    if params is None:
        params = op.parse_params(kwargs)
        if len(_params_cache) >= _CACHE_LIMIT:
            _params_cache.clear()
        _params_cache[key] = params
    return key, params


# An op may run on the calling thread (when the engine is idle) only if it touches at most this many
# bytes, inputs and outputs together. Below it, handing the op to a worker costs more than the
# kernel; above it, the kernel runs long enough that the caller is better off going on with its
# Python (the next pushes, data loading) while a worker computes: MXNet's asynchronous call.
INLINE_MAX_BYTES = env_int("MXREF_ENGINE_INLINE_MAX_BYTES", 65536)


def small_enough_inline(nbytes: int) -> bool:
    """Whether an op touching ``nbytes`` (inputs plus outputs) may run on the calling thread."""
    return nbytes <= INLINE_MAX_BYTES


class _Plan:
    """What one (op, params, input shapes, input dtypes) combination needs at every call."""

    __slots__ = ("out_shapes", "out_dtypes", "out_nbytes", "mutate", "num_visible", "req", "single",
                 "kernel", "kernel_dev", "kernels_seen", "ufunc", "small", "simple", "loop")

    def __init__(self, op: OpDef, params: dict, shapes, dtypes):
        self.out_shapes, self.out_dtypes = out_shapes, out_dtypes = infer_outputs(op, params, shapes, dtypes)
        self.out_nbytes = [math.prod(s) * t.itemsize for s, t in zip(out_shapes, out_dtypes)]
        self.mutate = op.mutate_inputs(params) if op._aux_states or op._mutate else ()
        self.num_visible = op.num_visible_outputs(params)
        self.req = _WRITE.get(len(out_shapes)) or ("write",) * len(out_shapes)
        self.single = (out_shapes[0], out_dtypes[0]) if len(out_shapes) == 1 else None
        self.kernel, self.kernel_dev, self.kernels_seen, self.ufunc = None, None, -1, None
        # The compiled dispatch's inner loop for this plan (``dispatch_core.UfuncLoop``, ``False``
        # for none, ``None`` not looked for yet); the pure-Python path does not use it.
        self.loop = None
        in_nbytes = sum(math.prod(sh) * t.itemsize for sh, t in zip(shapes, dtypes))
        self.small = small_enough_inline(in_nbytes + sum(self.out_nbytes))
        # One output and nothing else to arrange (no resources, no mutated inputs, no copy to
        # another device, no sparse results): the compiled invoke's short path takes these.
        self.simple = (self.single is not None and not self.mutate and not op.resources
                       and op.output_ctx is None and not op.sparse_from_dense)


def infer_context(op: OpDef, inputs: Sequence, ctx: Optional[Context]) -> Context:
    """The context an operator runs on: its inputs' (which must agree), else ``ctx``, else the
    current one (an op without inputs: ``_zeros``, ``_random_uniform``). The tuned ``invoke``
    below inlines the same check."""
    if inputs:
        ctx = inputs[0].context
        if any(x.context != ctx for x in inputs):
            raise MXNetError(f"operator {op.name}: all inputs must be on one context, got "
                             f"{[str(x.context) for x in inputs]}")
        return ctx
    return current_context() if ctx is None else ctx


def infer_outputs(op: OpDef, params: dict, shapes: Sequence[tuple], dtypes: Sequence) -> tuple:
    """``(out_shapes, out_dtypes)`` of ``op`` on inputs of these shapes and dtypes (step 2).

    Raises ``MXNetError`` naming the operator and the input shapes when the inputs are wrong.
    """
    names = op.list_inputs(params)
    if len(shapes) != len(names):
        raise MXNetError(f"operator {op.name} expects {len(names)} input(s) ({', '.join(names)}), "
                         f"got {len(shapes)}")
    try:
        _, out_shapes = op.infer_shape(params, list(shapes))
        _, out_dtypes = op.infer_type(params, list(dtypes))
    except MXNetError as exc:
        raise MXNetError(f"operator {op.name}: {exc} (input shapes {list(shapes)}, "
                         f"dtypes {[d.name for d in dtypes]})") from None
    for i, (s, t) in enumerate(zip(out_shapes, out_dtypes)):
        if s is None or t is None or any(d < 0 for d in s):
            raise MXNetError(f"operator {op.name}: cannot infer the shape/dtype of output {i} from "
                             f"input shapes {list(shapes)}")
    return [tuple(s) for s in out_shapes], list(out_dtypes)


def _plan(op: OpDef, pkey, params: dict, inputs: Sequence[NDArray]) -> _Plan:
    n = len(inputs)
    # Flat keys for the common arities: building them is most of the cost of a cache hit.
    if n == 1:
        x = inputs[0]
        key = (pkey, x._shape, x._dtype)
    elif n == 2:
        x, y = inputs
        key = (pkey, x._shape, x._dtype, y._shape, y._dtype)
    else:
        key = (pkey, tuple([x._shape for x in inputs]), tuple([x._dtype for x in inputs]))
    plan = _infer_cache.get(key) if pkey is not None else None
    if plan is None:
        plan = _Plan(op, params, tuple([x._shape for x in inputs]), tuple([x._dtype for x in inputs]))
        if pkey is not None:
            if len(_infer_cache) >= _CACHE_LIMIT:
                _infer_cache.clear()
            _infer_cache[key] = plan
    return plan


def _kernel(op: OpDef, plan: _Plan, ctx: Context) -> Callable:
    """The kernel for ``ctx``'s device, remembered on the plan until the kernel table grows."""
    if plan.kernel_dev != ctx.device_typeid or plan.kernels_seen != len(_KERNELS):
        plan.kernel = registry.get_kernel(op, ctx.device_type)
        plan.kernel_dev = ctx.device_typeid
        plan.kernels_seen = len(_KERNELS)
        # A kernel that is one ufunc (``elemwise.make_kernel``) is that ufunc on a single written
        # output: ``_KernelCall`` then calls it straight away, with no OpContext to build.
        ufunc = getattr(plan.kernel, "ufunc", None)
        plan.ufunc = ufunc if plan.req == ("write",) else None
        plan.loop = None
    return plan.kernel


# ---------------------------------------------------------------------------------------------
# invoke
# ---------------------------------------------------------------------------------------------

def invoke_name(name: str, inputs: List[NDArray], kwargs: dict, out=None, ctx=None) -> List[NDArray]:
    """``invoke`` by operator name (the path NDArray's arithmetic operators take)."""
    op = _OPS.get(name)
    if op is None:
        op = registry.get(name)   # raises the registry's "not registered" error
    pkey, params = parse_params(op, kwargs)
    return invoke(op, pkey, params, inputs, out, ctx)


_default_cache: dict = {}   # op name -> (op, default params)
_scalar_cache: dict = {}    # (op name, scalar type, scalar) -> (op, params)


def invoke_default(name: str, inputs: List[NDArray], out=None) -> List[NDArray]:
    """``invoke`` with the op's default parameters: ``a + b`` and ``a += b`` take this short path."""
    entry = _default_cache.get(name)
    if entry is None:
        op = _OPS.get(name) or registry.get(name)
        entry = _default_cache[name] = (op, op.parse_params({}))
    return invoke(entry[0], name, entry[1], inputs, out)


def invoke_scalar(name: str, x: NDArray, scalar, out=None) -> List[NDArray]:
    """``invoke`` of a ``_*_scalar`` operator: ``a + 1`` and ``a += 1`` take this short path."""
    key = (name, scalar.__class__, scalar)
    entry = _scalar_cache.get(key)
    if entry is None:
        op = _OPS.get(name) or registry.get(name)
        entry = (op, op.parse_params({"scalar": scalar}))
        if len(_scalar_cache) >= _CACHE_LIMIT:
            _scalar_cache.clear()
        _scalar_cache[key] = entry
    return invoke(entry[0], key, entry[1], [x], out)


def invoke(op: OpDef, pkey, params: dict, inputs: List[NDArray], out=None,
           ctx: Optional[Context] = None, req=None) -> List[NDArray]:
    """Push ``op`` on ``inputs`` and return its outputs (all of them, hidden ones included).

    The tuned form of ``invoke_plain.invoke`` (same steps, same results). Where the steps of the
    module docstring happen here: 1 before the call (``parse_params`` and the short paths), 2 in
    ``_plan`` (cached per op, parameters, input shapes and dtypes), 3 and 4 below (tuples spelled
    out for one output and one or two inputs; ``check_out`` for any other ``out=``), 5 in
    ``_KernelCall.__call__`` (the kernel was looked up on the plan by ``_kernel``), 6 at the end.

    Parameters
    ----------
    op : OpDef
        The operator.
    pkey, params
        As returned by :func:`parse_params` (``pkey`` keys the shape-inference cache).
    inputs : list of NDArray
        Arguments then auxiliary states, in the operator's order.
    out : NDArray or list of NDArray, optional
        Arrays to write the results into instead of new ones (``a += b`` passes ``out=a``).
    ctx : Context, optional
        Where an operator without inputs (``_zeros``, ``_random_uniform``) runs.
    req : sequence of str, optional
        One request per output (MXNet's ``OpReqType``): ``'write'`` (the default for all),
        ``'add'``, or ``'null'`` for an output nobody reads, which a kernel may skip computing
        (autograd passes it for the data gradient of a network's first layer).
    """
    # Sparse inputs or outputs (or an op that can make sparse ones) take the storage dispatch.
    if op.sparse_from_dense or (out is not None and out.__class__ is not NDArray):
        sparse = True
    else:
        sparse = False
        for x in inputs:
            if x._sparse:
                sparse = True
                break
    if sparse:
        result = _storage_dispatch.invoke(op, params, inputs, out, ctx) \
            if _storage_dispatch.wanted(op, inputs, out) else None
        if result is not None:
            return result
    plan = _plan(op, pkey, params, inputs)
    if inputs:
        ctx = inputs[0]._chunk.ctx
        for x in inputs:
            if x._chunk.ctx is not ctx and x._chunk.ctx != ctx:
                raise MXNetError(f"operator {op.name}: all inputs must be on one context, got "
                                 f"{[str(i.context) for i in inputs]}")
    elif ctx is None:
        ctx = current_context()
    if op.output_ctx is not None:     # a cross-device copy: the output lives on its dst
        ctx = op.output_ctx(params)
    eng = _engine_mod._engine or _engine_mod.get()
    single = plan.single
    # NOTE: everything made below lives until the op has run, i.e. across garbage collections
    # while ops queue up, and every surviving container object adds to the collector's work (with
    # a closure and lists it was a third of the time of ``c = a + b``). So the variable lists are
    # tuples the engine keeps as they are, spelled out for the usual one output and one or two
    # inputs, and the pushed function is one small object holding one list of the arrays.
    if out is None:
        if single is not None:
            shape, dtype = single
            var = eng.new_variable()
            outputs = [NDArray(Chunk(plan.out_nbytes[0], ctx, var), shape, dtype, 0)]
            mutable_vars = (var,)
        else:
            new_var = eng.new_variable
            outputs = [NDArray(Chunk(n, ctx, new_var()), s, t, 0)
                       for s, t, n in zip(plan.out_shapes, plan.out_dtypes, plan.out_nbytes)]
            mutable_vars = tuple([o._chunk.var for o in outputs])
    elif (single is not None and out.__class__ is NDArray and out._shape == single[0]
          and out._dtype == single[1] and out._chunk.ctx is ctx):
        outputs = [out]             # a += b: the common in-place case, already checked
        mutable_vars = (out._chunk.var,)
    else:
        outputs = check_out(op, out, plan.out_shapes, plan.out_dtypes, plan.num_visible, ctx)
        mutable_vars = tuple([o._chunk.var for o in outputs])
    n_in = len(inputs)
    if n_in == 1:
        const_vars = (inputs[0]._chunk.var,)
    elif n_in == 2:
        const_vars = (inputs[0]._chunk.var, inputs[1]._chunk.var)
    else:
        const_vars = tuple([x._chunk.var for x in inputs])
    if plan.mutate:
        mutable_vars += tuple([inputs[i]._chunk.var for i in plan.mutate])
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
        check_req(op, req, outputs)
    run = _KernelCall([*inputs, *outputs], n_in, kernel, _num_training != 0 and _state.is_train, ctx,
                      resources, params, req)
    run.ufunc = plan.ufunc if req is plan.req else None
    run.may_run_inline = plan.small
    eng.push_sync(run, ctx, const_vars, mutable_vars, _NORMAL, 0, op.name)
    if _record_hook is not None:
        _record_hook(op, params, inputs, outputs)
    return outputs


class _KernelCall:
    """The function ``invoke`` pushes: calls the kernel on the arrays' memory (``arrays`` holds the
    inputs, then the outputs)."""

    __slots__ = ("arrays", "n_in", "kernel", "is_train", "ctx", "resources", "params", "req",
                 "may_run_inline", "ufunc")
    # ``may_run_inline``: a kernel never blocks on another thread, so the threaded engine may run a
    # small one (``INLINE_MAX_BYTES``) on the pushing thread when nothing else is pending
    # (``ThreadedEnginePerDevice._push``); ``invoke`` sets it from the plan.

    def __init__(self, arrays, n_in, kernel, is_train, ctx, resources, params, req):
        self.arrays = arrays
        self.n_in = n_in
        self.kernel = kernel
        self.is_train = is_train
        self.ctx = ctx
        self.resources = resources
        self.params = params
        self.req = req
        self.may_run_inline = False
        self.ufunc = None           # the plan's ufunc: the kernel's own work, called directly

    def __call__(self, run_ctx) -> None:
        arrays, n = self.arrays, self.n_in
        # Drop the arrays once run: their memory may then be freed even if the engine keeps the
        # finished operation object around for a while (to reuse it, or as the last one run).
        self.arrays = None
        data = [x._data() for x in arrays]
        if self.ufunc is not None:
            self.ufunc(*data)       # inputs, then the one output: ``kernel`` with req write
            return
        self.kernel(_op_context(self.is_train, self.ctx, self.resources, run_ctx), self.params,
                    data[:n], data[n:], self.req)


_last_op_context = None


def _op_context(is_train: bool, ctx, resources, run_ctx) -> OpContext:
    """An ``OpContext`` for one kernel call: the last one made when it has no resources and the
    same run context, context and mode (nothing writes an OpContext: kernels only read it), so the
    idle run, which passes one ``RunContext`` per context, makes none per call."""
    global _last_op_context
    last = _last_op_context
    if (resources or last is None or last.run_ctx is not run_ctx or last.ctx is not ctx
            or last.is_train is not is_train):
        last = OpContext(is_train, ctx, resources, run_ctx)
        if not resources:
            _last_op_context = last
    return last


def check_req(op: OpDef, req, outputs) -> None:
    """Raise ``MXNetError`` unless ``req`` has one request per output."""
    if len(req) != len(outputs):
        raise MXNetError(f"operator {op.name}: req= needs one request per output ({len(outputs)}), "
                         f"got {len(req)}: {list(req)}")


def check_out(op: OpDef, out, out_shapes, out_dtypes, num_visible: int, ctx: Context) -> List[NDArray]:
    """The ``out=`` arrays after checking their number, shapes, dtypes and context (step 3), plus
    new arrays for the hidden outputs the caller did not pass."""
    outs = [out] if isinstance(out, NDArray) else list(out)
    if len(outs) != num_visible and len(outs) != len(out_shapes):
        raise MXNetError(f"operator {op.name}: expected {num_visible} output array(s) in out=, "
                         f"got {len(outs)}")
    for i, o in enumerate(outs):
        if not isinstance(o, NDArray):
            raise MXNetError(f"operator {op.name}: out= must hold NDArrays, got {type(o).__name__}")
        if o._shape != out_shapes[i]:
            raise MXNetError(f"operator {op.name}: out= array {i} has shape {o._shape}, but the result "
                             f"has shape {out_shapes[i]}")
        if o._dtype != out_dtypes[i]:
            raise MXNetError(f"operator {op.name}: out= array {i} has dtype {o._dtype.name}, but the "
                             f"result has dtype {out_dtypes[i].name}")
        if o._chunk.ctx != ctx:
            raise MXNetError(f"operator {op.name}: out= array {i} is on {o.context}, inputs on {ctx}")
    if len(outs) < len(out_shapes):
        # Hidden outputs the caller did not ask for still need somewhere to go.
        new_var = _engine_mod.get().new_variable
        for s, t in zip(out_shapes[len(outs):], out_dtypes[len(outs):]):
            outs.append(NDArray(Chunk(math.prod(s) * t.itemsize, ctx, new_var()), s, t, 0))
    return outs


# ---------------------------------------------------------------------------------------------
# Tuned or plain: which implementation the entry points above are (chosen once, not per call)
# ---------------------------------------------------------------------------------------------

_ENTRY_POINTS = ("parse_params", "invoke", "invoke_name", "invoke_default", "invoke_scalar")
_TUNED = {name: globals()[name] for name in _ENTRY_POINTS}
_TUNED_PYTHON_INVOKE = invoke     # the pure-Python twin of the compiled invoke (dispatch_core)
_compiled = None                  # mxref._ext.dispatch_core once loaded (see the end of this file)
_plain_selected, _selected_by = False, "default"


def is_plain() -> bool:
    """Whether the plain reference paths (``invoke_plain.py``, ``autograd_plain.py``) are selected."""
    return _plain_selected


def selected_paths() -> str:
    """Which paths run and why, for ``mxref.info()``: ``'tuned (default)'``, ``'plain (...)'``;
    the tuned ``invoke`` is ``'tuned, compiled'`` when it is ``dispatch_core``'s."""
    if _plain_selected:
        return f"plain ({_selected_by})"
    return f"tuned{', compiled' if _TUNED['invoke'] is not _TUNED_PYTHON_INVOKE else ''} ({_selected_by})"


def use_compiled(flag: bool = True) -> bool:
    """Make the tuned ``invoke`` the compiled one (``mxref._ext.dispatch_core``, when built and
    not in pure mode) or its pure-Python twin; return the previous choice. For tests comparing
    the two (``tests/test_plain_paths.py``); rebinds the entry points as ``use_plain`` does."""
    old = _TUNED["invoke"] is not _TUNED_PYTHON_INVOKE
    _TUNED["invoke"] = _compiled.invoke if flag and _compiled is not None else _TUNED_PYTHON_INVOKE
    _select(_plain_selected, _selected_by)
    return old


def use_plain(flag: bool = True) -> bool:
    """Select the plain reference paths (``True``) or the tuned ones; return the previous choice.

    Rebinds this module's entry points, so the tuned ``invoke`` pays nothing for the switch;
    ``autograd.backward`` and ``autograd.grad`` follow it too. Meant for tests and debugging,
    between operations (not while other threads dispatch)::

        old = imperative.use_plain(True)
        try:
            ...                       # every mx.nd call and backward takes the plain paths
        finally:
            imperative.use_plain(old)
    """
    return _select(flag, "imperative.use_plain")


def _select(flag: bool, why: str) -> bool:
    global _plain_selected, _selected_by
    old, _plain_selected, _selected_by = _plain_selected, bool(flag), why
    source = vars(_plain) if _plain_selected else _TUNED
    globals().update({name: source[name] for name in _ENTRY_POINTS})
    return old


class plain_paths:  # noqa: N801 - used like a function: ``with plain_paths():``
    """``with imperative.plain_paths():`` runs the block on the plain paths (``False``: tuned)."""

    def __init__(self, flag: bool = True):
        self._flag = flag

    def __enter__(self) -> None:
        self._old = use_plain(self._flag)

    def __exit__(self, *exc) -> bool:
        use_plain(self._old)
        return False


def plain_by_default() -> tuple:
    """``(plain?, why)``: ``MXREF_PLAIN_PATHS`` if set, else pure mode (the one switch of
    ``mxref/_ext/switch.py`` set to reference only, as ``MXREF_ENABLE_EXT=0`` sets it at import)."""
    flag = os.environ.get("MXREF_PLAIN_PATHS", "")
    if flag in ("0", "1"):
        return flag == "1", f"MXREF_PLAIN_PATHS={flag}"
    if flag:
        raise MXNetError(f"MXREF_PLAIN_PATHS must be 0 or 1, got {flag!r}")
    if _switch.reference_only():
        return True, f"pure mode: {_switch.reason()}"
    return False, "default"


from . import invoke_plain as _plain  # noqa: E402 - it reads this module's hooks
from . import storage_dispatch as _storage_dispatch  # noqa: E402 - it calls back into invoke

# The compiled tuned invoke (``mxref/_ext/dispatch_core.pyx``), unless pure mode or not built.
_compiled = _loader.load("dispatch_core", "imperative dispatch")
if _compiled is not None:
    _compiled.bind(sys.modules[__name__])
    _TUNED["invoke"] = _compiled.invoke
    # ``a + b`` and friends, compiled too; they defer to the Python methods (kept here) whenever
    # another invoke is selected.
    from ..base import numeric_types as _numeric_types  # noqa: E402
    _PYTHON_METHODS = _compiled.install(NDArray, _numeric_types)
_select(*plain_by_default())
