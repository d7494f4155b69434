"""Imperative dispatch: run one registered operator on NDArrays by pushing it to the engine.

``invoke`` is the path every ``mx.nd`` call takes (MXNet's ``Imperative::Invoke``):

1. parse the keyword arguments into typed parameters (cached per distinct call),
2. infer output shapes and dtypes at call time, so shape errors raise here (cached too),
3. make the outputs: new NDArrays whose memory is *not* allocated yet, or the ``out=`` arrays,
4. push one engine operation reading the inputs' variables and writing the outputs' variables
   (plus the variables of the op's resources and of any auxiliary inputs it mutates),
5. inside that operation, on the worker: allocate the outputs on first write, take numpy views,
   and call the kernel ``(octx, params, inputs, outputs, req)``. The kernel was resolved before the
   push by ``registry.get_kernel(op, device)`` and is cached on the plan of step 2 until the
   kernel table changes (``len(registry._KERNELS)``: a kernel registered, or the switch flipped).

Errors raised by the kernel are stored by the engine and raised at the next wait.
"""
from __future__ import annotations

import math
import threading
from typing import Callable, List, Optional, Sequence

from .. import engine as _engine_mod
from .. import resource as _resource
from ..base import MXNetError
from ..context import Context, current_context
from ..engine.base import FnProperty
from ..ops import registry
from ..ops.registry import OpContext, OpDef
from .chunk import Chunk
from .ndarray import NDArray

__all__ = ["invoke", "invoke_name", "invoke_plain", "invoke_scalar", "parse_params", "is_training",
           "set_is_training", "set_record_hook"]

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


def is_training() -> bool:
    """Whether operators run in training mode on this thread (``OpContext.is_train``)."""
    return _state.is_train


def set_is_training(flag: bool) -> bool:
    """Set this thread's training flag and return the previous one (``autograd.train_mode`` uses it)."""
    old = _state.is_train
    _state.is_train = bool(flag)
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


class _Plan:
    """What one (op, params, input shapes, input dtypes) combination needs at every call."""

    __slots__ = ("out_shapes", "out_dtypes", "out_nbytes", "mutate", "num_visible", "req", "single",
                 "kernel", "kernel_dev", "kernels_seen")

    def __init__(self, op: OpDef, params: dict, shapes, dtypes):
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
        self.out_shapes = [tuple(s) for s in out_shapes]
        self.out_dtypes = list(out_dtypes)
        self.out_nbytes = [math.prod(s) * t.itemsize for s, t in zip(self.out_shapes, self.out_dtypes)]
        self.mutate = op.mutate_inputs(params) if op._aux_states else ()
        self.num_visible = op.num_visible_outputs(params)
        self.req = _WRITE.get(len(out_shapes)) or ("write",) * len(out_shapes)
        self.single = (self.out_shapes[0], self.out_dtypes[0]) if len(out_shapes) == 1 else None
        self.kernel, self.kernel_dev, self.kernels_seen = None, None, -1


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


_plain_cache: dict = {}     # op name -> (op, default params)
_scalar_cache: dict = {}    # (op name, scalar type, scalar) -> (op, params)


def invoke_plain(name: str, inputs: List[NDArray], out=None) -> List[NDArray]:
    """``invoke`` without keyword arguments: ``a + b`` and ``a += b`` take this short path."""
    entry = _plain_cache.get(name)
    if entry is None:
        op = _OPS.get(name) or registry.get(name)
        entry = _plain_cache[name] = (op, op.parse_params({}))
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
           ctx: Optional[Context] = None) -> List[NDArray]:
    """Push ``op`` on ``inputs`` and return its outputs (all of them, hidden ones included).

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
    """
    plan = _plan(op, pkey, params, inputs)
    if inputs:
        ctx = inputs[0]._chunk.ctx
        for x in inputs:
            if x._chunk.ctx is not ctx and x._chunk.ctx != ctx:
                raise MXNetError(f"operator {op.name}: all inputs must be on one context, got "
                                 f"{[str(i.context) for i in inputs]}")
    elif ctx is None:
        ctx = current_context()
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
        outputs = _check_out(op, plan, out, ctx)
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
    run = _KernelCall([*inputs, *outputs], n_in, kernel, _state.is_train, ctx, resources, params, plan.req)
    eng.push_sync(run, ctx, const_vars, mutable_vars, _NORMAL, 0, op.name)
    if _record_hook is not None:
        _record_hook(op, params, inputs, outputs)
    return outputs


class _KernelCall:
    """The function ``invoke`` pushes: calls the kernel on the arrays' memory (``arrays`` holds the
    inputs, then the outputs)."""

    __slots__ = ("arrays", "n_in", "kernel", "is_train", "ctx", "resources", "params", "req")

    def __init__(self, arrays, n_in, kernel, is_train, ctx, resources, params, req):
        self.arrays = arrays
        self.n_in = n_in
        self.kernel = kernel
        self.is_train = is_train
        self.ctx = ctx
        self.resources = resources
        self.params = params
        self.req = req

    def __call__(self, run_ctx) -> None:
        arrays, n = self.arrays, self.n_in
        # Drop the arrays once run: their memory may then be freed even if the engine keeps the
        # finished operation object around for a while (to reuse it, or as the last one run).
        self.arrays = None
        data = [x._data() for x in arrays]
        self.kernel(OpContext(self.is_train, self.ctx, self.resources, run_ctx), self.params,
                    data[:n], data[n:], self.req)


def _check_out(op: OpDef, plan: _Plan, out, ctx) -> List[NDArray]:
    outs = [out] if isinstance(out, NDArray) else list(out)
    if len(outs) != plan.num_visible and len(outs) != len(plan.out_shapes):
        raise MXNetError(f"operator {op.name}: expected {plan.num_visible} output array(s) in out=, "
                         f"got {len(outs)}")
    for i, o in enumerate(outs):
        if not isinstance(o, NDArray):
            raise MXNetError(f"operator {op.name}: out= must hold NDArrays, got {type(o).__name__}")
        if o._shape != plan.out_shapes[i]:
            raise MXNetError(f"operator {op.name}: out= array {i} has shape {o._shape}, but the result "
                             f"has shape {plan.out_shapes[i]}")
        if o._dtype != plan.out_dtypes[i]:
            raise MXNetError(f"operator {op.name}: out= array {i} has dtype {o._dtype.name}, but the "
                             f"result has dtype {plan.out_dtypes[i].name}")
        if o._chunk.ctx != ctx:
            raise MXNetError(f"operator {op.name}: out= array {i} is on {o.context}, inputs on {ctx}")
    if len(outs) < len(plan.out_shapes):
        # Hidden outputs the caller did not ask for still need somewhere to go.
        new_var = _engine_mod.get().new_variable
        for s, t, n in zip(plan.out_shapes[len(outs):], plan.out_dtypes[len(outs):],
                           plan.out_nbytes[len(outs):]):
            outs.append(NDArray(Chunk(n, ctx, new_var()), s, t, 0))
    return outs
