"""``HybridBlock`` (trace ``hybrid_forward`` into a Symbol, run it through a cached executor) and
``SymbolBlock`` (a HybridBlock made from a Symbol, e.g. files written by ``export``).

How ``hybridize`` works is in ``docs/architecture/gluon.md``; in short: ``hybrid_forward`` is
called once with ``F = mx.sym`` and symbol variables, which traces it into a Symbol; that Symbol is
bound (``mxref.executor.bind``) to the Parameters' own arrays, once per input signature, and each
call pushes it on the caller's inputs, writing new outputs (``mxref.cached_op``: no copies).
Under ``autograd.record()`` the whole call is one recorded node (an ``autograd.Function``) whose
backward runs the executor's backward.
"""
from __future__ import annotations

import copy
import warnings
import weakref
from typing import Dict, List, Optional

from .. import autograd
from .. import ndarray as nd
from .. import symbol as _symbol
from ..base import MXNetError
from ..cached_op import CachedOp
from ..executor import bind as _bind
from ..graph import topo_sort
from ..ndarray import imperative as _imperative
from ..ndarray.ndarray import _STORAGE_TYPE_STR_TO_ID, NDArray, _memoryless
from .block import Block, _flatten, _gather_type_ctx_info, _regroup
from .parameter import DeferredInitializationError, Parameter, ParameterDict, shape_is_known

__all__ = ["HybridBlock", "SymbolBlock"]

_MAX_SIGNATURES = 16   # input signatures whose executors a HybridBlock keeps
# id of a Parameter's gradient buffer -> busy executors that write it directly. Only one may:
# two recorded calls sharing a parameter each need a buffer of their own for autograd to sum.
_claimed: Dict[int, int] = {}


class _CachedCall(autograd.Function):
    """One hybridized call recorded as one autograd node; backward is the executor's backward."""

    def __init__(self, entry: "_ExecEntry"):
        super().__init__()
        self.entry = entry
        self.io = None
        entry.acquire()
        # NOTE: the executor's buffers hold this call's forward values until its backward has run
        # (or the recorded graph is dropped); another call meanwhile binds a second executor.
        weakref.finalize(self, entry.release)

    def forward(self, *inputs):
        data = self.entry.data_arrays(inputs[:self.entry.num_data])
        outputs = self.entry.cached.forward(data, autograd.is_training())
        # The backward reads this call's inputs and outputs; kept as aliases, since the outputs
        # will point at the recorded node, which points at this object.
        self.io = ([autograd._alias(x) for x in data], [autograd._alias(o) for o in outputs])
        return outputs

    def backward(self, *ograds):
        entry = self.entry
        if entry.direct and not autograd._storing_grads():
            return entry.backward_sparing_grads(self.io, ograds)
        entry.cached.backward(*self.io, ograds, True)
        return entry.input_grads()


class _ExecEntry:
    """An executor bound to one input signature, with what a call needs to use it."""

    def __init__(self, executor, data_names: List[str], grad_names: List[str],
                 grad_params: List[Parameter], direct: List[NDArray], param_inputs: List[NDArray],
                 unused: Optional[dict] = None):
        self.executor = executor
        self.unused = unused or {}            # data inputs the graph never reads: (shape, dtype)
        self.data_names = data_names
        self.grad_names = grad_names          # the data inputs then the parameters taking a gradient
        self.grad_params = grad_params
        # ``p.data(ctx)`` of each of grad_params when bound (the key that finds this entry says
        # they still are): the recorded call's inputs besides the data.
        self.param_inputs = param_inputs
        # Parameters' .grad buffers bound as the executor's own gradient arrays: under backward()
        # the executor writes them and autograd has nothing left to copy.
        self.direct = direct
        self._direct_ids = tuple(id(g) for g in direct)
        self.num_data = len(data_names)
        self.busy = False
        self._input_grads: Optional[List[NDArray]] = None
        self.cached = CachedOp(executor, data_names)
        self._ctx = executor._ctx

    def usable(self) -> bool:
        if self.busy:
            return False
        # (nothing is claimed between training steps: the last step's backward released it)
        return not _claimed or not any(_claimed.get(k) for k in self._direct_ids)

    def acquire(self) -> None:
        self.busy = True
        for k in self._direct_ids:
            _claimed[k] = _claimed.get(k, 0) + 1

    def release(self) -> None:
        if not self.busy:
            return
        self.busy = False
        for k in self._direct_ids:
            if _claimed[k] == 1:
                del _claimed[k]
            else:
                _claimed[k] -= 1

    def backward_sparing_grads(self, io, ograds) -> List[NDArray]:
        """Backward for ``autograd.grad``, which must leave ``.grad`` as it was: the gradients
        the executor writes into the direct buffers are returned as copies and the buffers restored."""
        saved = [g.copy() for g in self.direct]
        self.cached.backward(*io, ograds, True)
        direct = set(self._direct_ids)
        out = [g.copy() if id(g) in direct else g for g in self.input_grads()]
        for keep, g in zip(saved, self.direct):
            keep.copyto(g)
        return out

    def data_arrays(self, data) -> List[NDArray]:
        """The call's data inputs as NDArrays on the executor's context (the signature matched
        their shapes and dtypes)."""
        ctx = self._ctx
        return [x if isinstance(x, NDArray) and (x._chunk.ctx is ctx or x.context == ctx)
                else nd.array(x, ctx) for x in data]

    def run_forward(self, data) -> List[NDArray]:
        """An unrecorded call: the outputs are new arrays, the executor's buffers stay free."""
        return self.cached.forward(self.data_arrays(data), autograd.is_training())

    def input_grads(self) -> List[NDArray]:
        """The gradient of each recorded input (data, then parameters): the executor's gradient
        arrays, and zeros for inputs that take none (the same arrays every call)."""
        if self._input_grads is None:
            grads = self.executor.grad_dict
            out = []
            for name in self.grad_names:
                g = grads.get(name)
                if g is None:
                    arr = self.executor.arg_dict.get(name)
                    shape, dtype = self.unused[name] if arr is None else (arr.shape, arr.dtype)
                    g = nd.zeros(shape, self._ctx, dtype)
                out.append(g)
            self._input_grads = out
        return self._input_grads


class HybridBlock(Block):
    """A Block whose computation ``hybrid_forward(F, x, *args, **params)`` works on NDArrays
    (``F = mx.nd``) and on Symbols (``F = mx.sym``), so that ``hybridize()`` can trace it into a
    graph run by an executor.

    Parameters registered on the block arrive in ``hybrid_forward`` as keyword arguments by
    attribute name (``weight``, ``bias``): NDArrays imperatively, symbol variables when traced.
    """

    def __init__(self, prefix: Optional[str] = None, params: Optional[ParameterDict] = None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached_execs: Dict[tuple, List[_ExecEntry]] = {}
        self._param_table: Optional[Dict[str, Parameter]] = None
        self._params_ready = False
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags: Dict[str, object] = {}
        self._arrays_key = (None, -1, ())   # (ctx, Parameter.arrays_version, the arrays' ids)
        self._dynamic = ((), False)         # (the traced graph, whether it runs op by op)
        self._inline_cache = ((), [])       # (the traced graph, its operator nodes)

    def __setattr__(self, name: str, value) -> None:
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block: Block, name: Optional[str] = None) -> None:
        if not isinstance(block, HybridBlock):
            raise ValueError(f"Children of HybridBlock must also be HybridBlock, but {block} has type "
                             f"{type(block)}. If you are using Sequential, please try HybridSequential "
                             "instead.")
        super().register_child(block, name)
        self._clear_cached_op()

    def _clear_cached_op(self) -> None:
        self._cached_graph = ()
        self._cached_execs = {}
        self._param_table = None
        self._params_ready = False
        self._arrays_key = (None, -1, ())

    def hybridize(self, active: bool = True, static_alloc: bool = False, static_shape: bool = False,
                  **kwargs) -> None:
        """Run through a traced Symbol and executor from the next call on (``active=False``: undo).

        The executor always plans its memory once per input signature and keeps it, which is
        what ``static_alloc`` and ``static_shape`` ask MXNet's CachedOp for; the flags are kept
        for compatibility.
        """
        self._active = active
        self._flags = dict(static_alloc=static_alloc, static_shape=static_shape, **kwargs)
        self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f'"{self.name}" is being hybridized while still having forward hook/pre-hook. '
                          "If it is a child of HybridBlock, the hooks will not take effect.", stacklevel=2)
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape, **kwargs)

    def cast(self, dtype) -> None:
        self._clear_cached_op()
        super().cast(dtype)

    # -- tracing ------------------------------------------------------------------------------
    def _get_graph(self, *args):
        if not self._cached_graph:
            flat, self._in_format = _flatten(args, "input")
            if len(flat) > 1:
                inputs = [_symbol.var(f"data{i}") if a is not None else None for i, a in enumerate(flat)]
            else:
                inputs = [_symbol.var("data") if flat[0] is not None else None]
            grouped, _ = _regroup(inputs, self._in_format)
            params = {k: v.var() for k, v in self._reg_params.items()}
            with self.name_scope():
                out = self.hybrid_forward(_symbol, *grouped, **params)
            out, self._out_format = _flatten(out, "output")
            self._cached_graph = [i for i in inputs if i is not None], _symbol.Group(out)
        return self._cached_graph

    def _infer_attrs(self, kind: str, *args) -> None:
        inputs, out = self._get_graph(*args)
        flat = [a for a in _flatten(args, "input")[0] if a is not None]
        given = {i.name: getattr(a, kind) for i, a in zip(inputs, flat)}
        if kind == "shape":
            arg, _, aux = out.infer_shape_partial(**given)
        else:
            arg, _, aux = out.infer_type_partial(**given)
        found = dict(zip(out.list_arguments(), arg))
        found.update(zip(out.list_auxiliary_states(), aux))
        for p in self.collect_params().values():
            value = found.get(p.name)
            if value is not None and (kind != "shape" or len(value)):
                setattr(p, kind, value)

    def infer_shape(self, *args) -> None:
        """Fill in the parameters' unknown dimensions from the inputs' shapes."""
        self._infer_attrs("shape", *args)

    def infer_type(self, *args) -> None:
        """Fill in the parameters' dtypes from the inputs' dtypes."""
        self._infer_attrs("dtype", *args)

    def _deferred_infer_shape(self, *args) -> None:
        try:
            self.infer_shape(*args)
        except Exception as exc:
            raise ValueError("Deferred initialization failed because shape cannot be inferred. "
                             f"{exc}") from exc

    # -- running ------------------------------------------------------------------------------
    def _executor(self, args, flat: List[NDArray], recording: bool) -> _ExecEntry:
        """A free executor for this input signature (bound on first use)."""
        inputs, out = self._get_graph(*args)
        ctx = flat[0].context
        if self._param_table is None:
            self._param_table = {p.name: p for p in self.collect_params().values()}
        params = self._param_table
        needs_grad = tuple([recording and autograd._live_entry(x) is not None for x in flat])
        key = (tuple([(x.shape, x.dtype) for x in flat]), ctx, recording, needs_grad,
               self._param_arrays_key(ctx))
        for entry in self._cached_execs.get(key, ()):
            if entry.usable():
                return entry
        data_names = [i.name for i in inputs]
        arg_arrays, grads, reqs, unused = {}, {}, {}, {}
        graph_inputs = set(out.list_inputs())
        for name, x, wants in zip(data_names, flat, needs_grad):
            if name not in graph_inputs:    # an input the graph never reads: its gradient is zero
                unused[name] = (x.shape, x.dtype)
                continue
            arg_arrays[name] = _memoryless(x.shape, ctx, x.dtype)   # each call's own x is read
            if wants:
                grads[name] = nd.zeros(x.shape, ctx, x.dtype)
        grad_names, grad_params, direct, param_inputs = list(data_names), [], [], []
        for name in out.list_arguments():
            if name in arg_arrays:
                continue
            if name not in params:
                raise MXNetError(f"Unknown input to HybridBlock: {name}")
            p = params[name]
            arg_arrays[name] = p.data(ctx)
            if recording and p.grad_req != "null":
                pgrad = p.grad(ctx)
                if p.grad_req == "write" and not _claimed.get(id(pgrad)):
                    grads[name] = pgrad
                    direct.append(pgrad)
                else:
                    grads[name] = nd.zeros(p.shape, ctx, p.dtype)
                reqs[name] = "write"
                grad_names.append(name)
                grad_params.append(p)
                param_inputs.append(arg_arrays[name])
        for name in data_names:
            if name not in unused:
                reqs[name] = "write" if name in grads else "null"
        aux = {name: params[name].data(ctx) for name in out.list_auxiliary_states()}
        executor = _bind(out, ctx, arg_arrays, grads or None, reqs, aux)
        entry = _ExecEntry(executor, data_names, grad_names, grad_params, direct, param_inputs, unused)
        self._evict_signatures()
        self._cached_execs.setdefault(key, []).append(entry)
        return entry

    def _param_arrays_key(self, ctx) -> tuple:
        """The ids of the parameters' arrays and gradient buffers on ``ctx``: part of the executor
        key, since re-initialization or cast makes new ones. Looked at again only when some
        Parameter's arrays have been replaced since (``Parameter.arrays_version``)."""
        last_ctx, version, ids = self._arrays_key
        if last_ctx is ctx and version == Parameter.arrays_version:
            return ids
        params = self._param_table.values()
        ids = (tuple(id(p._data.get(ctx)) if p._data else 0 for p in params),
               tuple(id(p._grad.get(ctx)) if p._grad else 0 for p in params))
        self._arrays_key = (ctx, Parameter.arrays_version, ids)
        return ids

    def _evict_signatures(self) -> None:
        """Forget the oldest idle signatures beyond ``_MAX_SIGNATURES``.

        NOTE: every signature holds a bound executor with its planned memory; inputs of ever
        changing shapes (sequence lengths) would otherwise keep them all alive.
        """
        for key in list(self._cached_execs):
            if len(self._cached_execs) < _MAX_SIGNATURES:
                return
            if not any(e.busy for e in self._cached_execs[key]):
                del self._cached_execs[key]

    def _forward_imperative(self, ctx, *args):
        """``hybrid_forward`` on NDArrays, one operator at a time.

        The parameters' arrays are looked up again only when some Parameter's arrays were
        replaced (``Parameter.arrays_version``), a Parameter was registered, or ``ctx`` changed."""
        reg = self._reg_params
        hit = self.__dict__.get("_imperative_params")
        if hit is not None and hit[0] is ctx and hit[1] == Parameter.arrays_version and hit[2] is reg \
                and hit[3] == len(reg):
            return self.hybrid_forward(nd, *args, **hit[4])
        try:
            params = {k: v.data(ctx) for k, v in self._reg_params.items()}
        except DeferredInitializationError:
            self._deferred_infer_shape(*args)
            for p in self._params.values():
                p._finish_deferred_init()
            params = {k: v.data(ctx) for k, v in self._reg_params.items()}
        object.__setattr__(self, "_imperative_params", (ctx, Parameter.arrays_version, reg, len(reg), params))
        return self.hybrid_forward(nd, *args, **params)

    def _check_format(self, fmt) -> None:
        """The call's input structure must be the traced one, up to trailing ``None`` inputs
        (left to their defaults), as MXNet's CachedOp demands."""
        stored = self._in_format
        if fmt == stored:
            return
        short, long_ = (fmt, stored) if len(fmt) < len(stored) else (stored, fmt)
        if len(short) == len(long_) or long_[:len(short)] != short or \
                any(f != -1 for f in long_[len(short):]):
            raise ValueError("The argument structure of HybridBlock does not match the cached "
                             f"version. Stored format = {stored}, input format = {fmt}")

    def _inline(self, graph) -> bool:
        """Whether a recorded call runs the traced graph op by op (each op its own autograd node)
        instead of as one cached node: MXNet's CachedOp inlines graphs of at most
        ``inline_limit`` operators (default 2) unless ``static_alloc``."""
        if self._flags.get("static_alloc"):
            return False
        limit = self._flags.get("inline_limit", 2)
        if self._inline_cache[0] is not graph:
            nodes = [n for n in topo_sort(graph[1]._outputs) if n.op is not None]
            self._inline_cache = (graph, nodes)
        nodes = self._inline_cache[1]
        # A control-flow node's subgraphs run through the executor only.
        return len(nodes) <= limit and not any(n.subgraphs for n in nodes)

    def _run_inline(self, graph, flat: List[NDArray], ctx):
        """The traced graph run op by op on ``flat`` and the parameters (recorded as it goes)."""
        inputs, out = graph
        values = {id(i._outputs[0].node): [x] for i, x in zip(inputs, flat)}
        params = self._param_table
        for node in topo_sort(out._outputs):
            if node.op is None:
                if id(node) not in values:
                    values[id(node)] = [params[node.name].data(ctx)]
                continue
            args = [values[id(e.node)][e.index] for e in node.inputs]
            values[id(node)] = _imperative.invoke(node.op, None, node.params, args)
        return [values[id(e.node)][e.index] for e in out._outputs]

    def _call_cached_op(self, *args):
        flat, fmt = _flatten(args, "input")
        if self._cached_graph and not isinstance(self, SymbolBlock):
            self._check_format(fmt)
        if all(a is None for a in flat):
            raise ValueError(f"All args are None and we do not support such a case. Received args={args}")
        graph = self._get_graph(*args)
        if self._dynamic[0] is not graph:
            self._dynamic = (graph, any(n.op is not None and n.op.dynamic_shape
                                        for n in topo_sort(graph[1]._outputs)))
        flat = [a for a in flat if a is not None]
        ctx = flat[0].context
        if self._dynamic[1]:
            # An operator whose output shape depends on the data (boolean_mask): a bound
            # executor needs every shape before it runs, so the graph runs op by op, as MXNet's
            # CachedOp does for dynamic shapes.
            return self._forward_imperative(ctx, *args)
        if not self._params_ready:
            try:
                for p in self.collect_params().values():
                    p.data(ctx)
            except DeferredInitializationError:
                self._deferred_infer_shape(*args)
                pending = [p for p in self.collect_params().values() if p._deferred_init]
                if any(not shape_is_known(p.shape) for p in pending):
                    # NOTE: the graph cannot tell every shape (a fused RNN child flattens its
                    # weights into one vector, whose pieces no rule infers backwards): this call
                    # runs op by op, each child inferring its own shapes from its real inputs.
                    return self._forward_imperative(ctx, *args)
                for p in pending:
                    p._finish_deferred_init()
            self._params_ready = True
        recording = autograd.is_recording()
        if recording and self._inline(graph):
            if self._param_table is None:
                self._param_table = {p.name: p for p in self.collect_params().values()}
            outs = self._run_inline(graph, flat, ctx)
            return _regroup(outs, self._out_format)[0]
        entry = self._executor(args, flat, recording)
        if recording:
            outs = _CachedCall(entry)(*flat, *entry.param_inputs)
        else:
            outs = entry.run_forward(flat)
        outs = [outs] if isinstance(outs, NDArray) else list(outs)
        return _regroup(outs, self._out_format)[0]

    def forward(self, x, *args):
        """Run ``hybrid_forward`` on NDArrays (imperatively, or through the cached executor when
        hybridized), or trace it when given Symbols. Inputs may nest in lists and be ``None``."""
        if not args and isinstance(x, NDArray):
            # The usual call, one array: what ``_gather_type_ctx_info`` would find, without the walk.
            ctx = x.context
            with ctx:
                return self._call_cached_op(x) if self._active else self._forward_imperative(ctx, x)
        has_sym, has_nd, ctxs, ctx = _gather_type_ctx_info([x, *args])
        if has_sym and has_nd:
            raise ValueError("In HybridBlock, we do not support mixed NDArrays and Symbols types for "
                             "the input. Please check the type of the args.")
        if not has_sym and not has_nd:
            raise ValueError("In HybridBlock, there must be one NDArray or one Symbol in the input. "
                             "Please check the type of the args.")
        if has_nd:
            with ctx:
                if self._active:
                    if len(ctxs) > 1:
                        raise ValueError("Find multiple contexts in the input, After hybridized, the "
                                         "HybridBlock only supports one input context. Find all "
                                         f"contexts = {ctxs}")
                    return self._call_cached_op(x, *args)
                return self._forward_imperative(ctx, x, *args)
        params = {k: v.var() for k, v in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(_symbol, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Override: the computation, written with ``F`` (``mx.nd`` or ``mx.sym``)."""
        raise NotImplementedError

    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True):
        """Write ``path-symbol.json`` and ``path-%04d.params`` (``arg:``/``aux:`` names), as MXNet does.

        The block must have been hybridized and run once (the traced graph is what is written).
        """
        if not self._cached_graph:
            raise RuntimeError("Please first call block.hybridize() and then run forward with this block "
                               "at least once before calling export.")
        sym = self._cached_graph[1]
        sym_file = f"{path}-symbol.json"
        sym.save(sym_file, remove_amp_cast=remove_amp_cast)
        arg_names, aux_names = set(sym.list_arguments()), set(sym.list_auxiliary_states())
        arg_dict = {}
        for name, p in self.collect_params().items():
            if name in arg_names:
                arg_dict[f"arg:{name}"] = p._reduce()
            elif name in aux_names:
                arg_dict[f"aux:{name}"] = p._reduce()
        params_file = f"{path}-{epoch:04d}.params"
        nd.save(params_file, arg_dict)
        return sym_file, params_file


def _common_prefix(names: List[str]) -> str:
    if not names:
        return ""
    prefix = names[0]
    for name in names:
        i = 0
        while i < min(len(prefix), len(name)) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


class SymbolBlock(HybridBlock):
    """A HybridBlock made from a Symbol: ``SymbolBlock(outputs, inputs, params=None)``.

    Every argument of ``outputs`` that is not an input becomes a Parameter (auxiliary states
    with ``grad_req='null'``), shapes found on the first forward.

    >>> net = SymbolBlock.imports('model-symbol.json', ['data'], 'model-0000.params')
    """

    @staticmethod
    def imports(symbol_file: str, input_names, param_file: Optional[str] = None, ctx=None,
                allow_missing: bool = False, ignore_extra: bool = False) -> "SymbolBlock":
        """Load a network written by ``export`` (or by MXNet's ``export``/``save_checkpoint``)."""
        sym = _symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        inputs = [_symbol.var(i) for i in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra, cast_dtype=True,
                                      dtype_source="saved")
        return ret

    def __init__(self, outputs, inputs, params: Optional[ParameterDict] = None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, _symbol.Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        out = _symbol.Group(out)
        # A graph runs dense Parameters only (MXNet asserts the same): a row_sparse weight needs
        # a Trainer pulling its rows, which only an imperative Block can do.
        for node in out.get_internals():
            if node.attr("__storage_type__") == str(_STORAGE_TYPE_STR_TO_ID["row_sparse"]):
                raise AssertionError(f"SymbolBlock doesn't support Parameter '{node.name}' because "
                                     "its storage type is 'row_sparse'.")
        input_names = {s.name for s in syms}
        for name in out.list_arguments():
            if name not in input_names:
                self.params.get(name, allow_deferred_init=True)
        for name in out.list_auxiliary_states():
            if name not in input_names:
                self.params.get(name, grad_req="null", allow_deferred_init=True)
        self._cached_graph = syms, out
        n = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {k[n:]: v for k, v in self._params.items()}

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            with x.context:
                return self._call_cached_op(x, *args)
        if not isinstance(x, _symbol.Symbol):
            raise MXNetError(f"SymbolBlock requires Symbol or NDArray input, got {type(x)}")
        flat, _ = _flatten([x, *args], "input")
        ret = copy.copy(self._cached_graph[1])
        ret._compose(**{k.name: v for k, v in zip(self._cached_graph[0], flat)})
        return _regroup(list(ret), self._out_format)[0]

    def _clear_cached_op(self) -> None:
        graph = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = graph

    def cast(self, dtype) -> None:
        self._clear_cached_op()
        Block.cast(self, dtype)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError

