"""Gluon ``Block`` (naming scopes, children, parameter files) and ``HybridBlock`` / ``SymbolBlock``.

How ``hybridize`` works is in ``docs/architecture/gluon.md``; in short: ``hybrid_forward`` is
called once with ``F = mx.sym`` and symbol variables, which traces it into a Symbol; that Symbol is
bound (``mxref.executor.bind``) to the Parameters' own arrays, once per input signature, and each
call copies the inputs in and pushes the executor. Under ``autograd.record()`` the whole call is
one recorded node (an ``autograd.Function``) whose backward runs the executor's backward.
"""
from __future__ import annotations

import copy
import re
import threading
import warnings
import weakref
from collections import OrderedDict
from typing import Dict, List, Optional

from .. import autograd, initializer
from .. import name as _name
from .. import ndarray as nd
from .. import symbol as _symbol
from ..base import MXNetError
from ..executor import bind as _bind
from ..ndarray.ndarray import NDArray
from .parameter import DeferredInitializationError, Parameter, ParameterDict

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


class _BlockScope:
    """The naming scope of a Block: counts its children per kind (``dense0_``, ``dense1_``)."""

    _current = threading.local()

    def __init__(self, block: "Block"):
        self._block = block
        self._counter: Dict[str, int] = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix: Optional[str], params: Optional[ParameterDict], hint: str):
        """The prefix and ParameterDict of a new block, from the scope it is created in."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                # Outside any block the symbol NameManager counts, so `dense0_` follows MXNet.
                prefix = _name.current().get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc):
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(*exc)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope


def _flatten(args, what: str):
    """Nested lists of arrays/symbols as a flat list plus the format to rebuild them."""
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, _symbol.Symbol):
        n = len(args.list_outputs())
        return ([args[i] for i in range(n)], n) if n > 1 else ([args], 0)
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise MXNetError(f"HybridBlock {what} must be (nested) list of Symbol or NDArray, but got "
                         f"{args} of type {type(args).__name__}")
    flat, fmts = [], []
    for a in args:
        f, fmt = _flatten(a, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    """Inverse of ``_flatten``: returns (rebuilt value, remaining items)."""
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        if fmt == -1:
            if args[0] is not None:
                raise MXNetError("HybridBlock: a None input became a value")
            return None, args[1:]
        return args[:fmt], args[fmt:]
    ret = []
    for f in fmt:
        res, args = _regroup(args, f)
        ret.append(res)
    return ret, args


class Block:
    """Base class of all layers and models: holds children Blocks and Parameters.

    Attributes assigned in ``__init__`` that are Blocks or Parameters are registered
    automatically; create children inside ``with self.name_scope():`` so their names get this
    block's prefix (``hybridsequential0_dense0_weight``).

    Examples
    --------
    >>> class Model(Block):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         with self.name_scope():
    ...             self.dense0 = nn.Dense(20)
    ...     def forward(self, x):
    ...         return self.dense0(x)
    """

    def __init__(self, prefix: Optional[str] = None, params: Optional[ParameterDict] = None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children: "OrderedDict[str, Block]" = OrderedDict()
        self._reg_params: Dict[str, Parameter] = {}
        self._forward_hooks: "OrderedDict[int, object]" = OrderedDict()
        self._forward_pre_hooks: "OrderedDict[int, object]" = OrderedDict()

    def __repr__(self) -> str:
        lines = [f"  ({k}): " + repr(b).replace("\n", "\n  ") for k, b in self._children.items()]
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)" if lines else f"{type(self).__name__}()"

    def __setattr__(self, name: str, value) -> None:
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(f"Changing attribute type for {name} from {type(existing)} to "
                                f"{type(value)} is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise AssertionError(f"Overriding Parameter attribute {name} is not allowed. If you want "
                                     "to share parameters between blocks, please set 'params' at Block "
                                     "construction instead.")
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self) -> str:
        return type(self).__name__.lower()

    @property
    def prefix(self) -> str:
        """Prefix of this block's names (``dense0_``)."""
        return self._prefix

    @property
    def name(self) -> str:
        """The prefix without its trailing underscore."""
        return self._name

    @property
    def params(self) -> ParameterDict:
        """This block's own parameters (not its children's: see ``collect_params``)."""
        return self._params

    def name_scope(self) -> _BlockScope:
        """``with block.name_scope():`` names children (and symbols) under this block's prefix."""
        return self._scope

    def collect_params(self, select: Optional[str] = None) -> ParameterDict:
        """This block's and all its descendants' parameters, optionally only names matching a regex.

        >>> net.collect_params('.*weight|.*bias')
        """
        ret = ParameterDict(self._params.prefix)
        pattern = re.compile(select) if select else None
        for k, v in self._params.items():
            if pattern is None or pattern.match(k):
                ret._params[k] = v
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix: str = "") -> Dict[str, Parameter]:
        """Parameters by structural name (``0.weight``, ``features.1.bias``), as in parameter files."""
        if prefix:
            prefix += "."
        ret = {prefix + k: v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename: str, deduplicate: bool = False) -> None:
        """Save parameters under structural names (MXNet's ``.params`` format)."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            seen, unique = {}, {}
            for k, v in params.items():
                if id(v) not in seen:
                    seen[id(v)] = k
                    unique[k] = v
            params = unique
        nd.save(filename, {k: v._reduce() for k, v in params.items()})

    def load_parameters(self, filename: str, ctx=None, allow_missing: bool = False,
                        ignore_extra: bool = False, cast_dtype: bool = False,
                        dtype_source: str = "current") -> None:
        """Load parameters written by ``save_parameters`` (or, as a fallback, by ``ParameterDict.save``)."""
        loaded = nd.load(filename)
        if not isinstance(loaded, dict):
            raise MXNetError(f"load_parameters: {filename} holds a list of arrays, not named arrays")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in k for k in loaded):
            # A file written by ParameterDict.save / export: full names with the prefix stripped.
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            ids = {id(v) for k, v in params.items() if k in loaded}
            for name, p in params.items():
                if name not in loaded and id(p) not in ids:
                    raise AssertionError(f"Parameter '{name}' is missing in file '{filename}', which "
                                         "contains parameters: " + ", ".join(sorted(loaded)[:10]) +
                                         ". Set allow_missing=True to ignore missing parameters.")
        for name, value in loaded.items():
            if name not in params:
                if not ignore_extra:
                    raise AssertionError(f"Parameter '{name}' loaded from file '{filename}' is not present "
                                         "in this block. Set ignore_extra=True to ignore.")
                continue
            params[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def register_child(self, block: "Block", name: Optional[str] = None) -> None:
        """Register ``block`` as a child (under ``name``, default its index)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """Call ``hook(block, inputs)`` before each forward; returns a handle with ``detach()``."""
        return _HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """Call ``hook(block, inputs, outputs)`` after each forward; returns a handle with ``detach()``."""
        return _HookHandle(self._forward_hooks, hook)

    def apply(self, fn) -> "Block":
        """Call ``fn(block)`` on every descendant and then on this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=None, ctx=None, verbose: bool = False, force_reinit: bool = False) -> None:
        """Initialize every parameter (``collect_params().initialize``; default ``Uniform(0.07)``)."""
        self.collect_params().initialize(init if init is not None else initializer.Uniform(), ctx,
                                         verbose, force_reinit)

    def hybridize(self, active: bool = True, **kwargs) -> None:
        """Hybridize the HybridBlocks among the descendants (a plain Block runs imperatively)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype) -> None:
        """Cast every parameter (and child) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for p in self._reg_params.values():
            p.cast(dtype)

    def zero_grad(self) -> None:
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx) -> None:
        self.collect_params().reset_ctx(ctx)

    def __call__(self, *args):
        for hook in self._forward_pre_hooks.values():
            hook(self, args)
        out = self.forward(*args)
        for hook in self._forward_hooks.values():
            hook(self, args, out)
        return out

    def forward(self, *args):
        """Override: the computation on NDArrays."""
        raise NotImplementedError


class _HookHandle:
    _next_id = 0

    def __init__(self, table, hook):
        self._table = weakref.ref(table)
        self._id = _HookHandle._next_id
        _HookHandle._next_id += 1
        table[self._id] = hook

    def detach(self) -> None:
        table = self._table()
        if table is not None:
            table.pop(self._id, None)


# ---------------------------------------------------------------------------------------------
# HybridBlock: the cached graph and its executors
# ---------------------------------------------------------------------------------------------

class _CachedCall(autograd.Function):
    """One hybridized call recorded as one autograd node; backward is the executor's backward."""

    def __init__(self, entry: "_ExecEntry"):
        super().__init__()
        self.entry = entry
        entry.busy = True
        # NOTE: the executor's buffers hold this call's forward values until its backward has run
        # (or the recorded graph is dropped); another call meanwhile binds a second executor.
        weakref.finalize(self, entry.release)

    def forward(self, *inputs):
        return self.entry.run_forward(inputs[:self.entry.num_data])

    def backward(self, *ograds):
        entry = self.entry
        entry.executor.backward(list(ograds), is_train=True)
        return entry.input_grads()


class _ExecEntry:
    """An executor bound to one input signature, with what a call needs to use it."""

    def __init__(self, executor, data_names: List[str], grad_names: List[str],
                 grad_params: List[Parameter]):
        self.executor = executor
        self.data_names = data_names
        self.grad_names = grad_names          # the data inputs then the parameters taking a gradient
        self.grad_params = grad_params
        self.num_data = len(data_names)
        self.busy = False
        self._zeros: Dict[str, NDArray] = {}

    def release(self) -> None:
        self.busy = False

    def run_forward(self, data) -> List[NDArray]:
        ex = self.executor
        for name, x in zip(self.data_names, data):
            ex.arg_dict[name][:] = x
        ex.forward(is_train=autograd.is_training())
        # Copies: the executor overwrites its outputs on the next call.
        return [o.copy() for o in ex.outputs]

    def input_grads(self) -> List[NDArray]:
        grads = self.executor.grad_dict
        out = []
        for name in self.grad_names:
            g = grads.get(name)
            if g is None:       # an input that takes no gradient: zeros of its shape
                if name not in self._zeros:
                    arr = self.executor.arg_dict[name]
                    self._zeros[name] = nd.zeros(arr.shape, arr.context, arr.dtype)
                g = self._zeros[name]
            out.append(g)
        return out


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
        needs_grad = tuple(recording and autograd._live_entry(x) is not None for x in flat)
        # The parameters' arrays are part of the key: re-initialization or cast makes new ones.
        key = (tuple((x.shape, x.dtype) for x in flat), ctx, recording, needs_grad,
               tuple(id(p._data.get(ctx)) if p._data else 0 for p in params.values()))
        for entry in self._cached_execs.get(key, ()):
            if not entry.busy:
                return entry
        data_names = [i.name for i in inputs]
        args, grads, reqs = {}, {}, {}
        for name, x, wants in zip(data_names, flat, needs_grad):
            args[name] = nd.zeros(x.shape, ctx, x.dtype)
            if wants:
                grads[name] = nd.zeros(x.shape, ctx, x.dtype)
        grad_names, grad_params = list(data_names), []
        for name in out.list_arguments():
            if name in args:
                continue
            if name not in params:
                raise MXNetError(f"Unknown input to HybridBlock: {name}")
            p = params[name]
            args[name] = p.data(ctx)
            if recording and p.grad_req != "null":
                grads[name] = nd.zeros(p.shape, ctx, p.dtype)
                reqs[name] = "write"
                grad_names.append(name)
                grad_params.append(p)
        for name in data_names:
            reqs[name] = "write" if name in grads else "null"
        aux = {name: params[name].data(ctx) for name in out.list_auxiliary_states()}
        executor = _bind(out, ctx, args, grads or None, reqs, aux)
        entry = _ExecEntry(executor, data_names, grad_names, grad_params)
        self._cached_execs.setdefault(key, []).append(entry)
        return entry

    def _call_cached_op(self, *args):
        flat, fmt = _flatten(args, "input")
        if self._cached_graph and fmt != self._in_format and not isinstance(self, SymbolBlock):
            self._clear_cached_op()     # another input structure (a list of states, None): retrace
        self._get_graph(*args)
        flat = [a for a in flat if a is not None]
        ctx = flat[0].context
        if not self._params_ready:
            try:
                for p in self.collect_params().values():
                    p.data(ctx)
            except DeferredInitializationError:
                self._deferred_infer_shape(*args)
                for p in self.collect_params().values():
                    p._finish_deferred_init()
            self._params_ready = True
        recording = autograd.is_recording()
        entry = self._executor(args, flat, recording)
        if recording:
            outs = _CachedCall(entry)(*flat, *[p.data(ctx) for p in entry.grad_params])
        else:
            outs = entry.run_forward(flat)
        outs = [outs] if isinstance(outs, NDArray) else list(outs)
        return _regroup(outs, self._out_format)[0]

    def forward(self, x, *args):
        """Run ``hybrid_forward`` on NDArrays (imperatively, or through the cached executor when
        hybridized), or trace it when given Symbols."""
        if isinstance(x, NDArray):
            with x.context:
                if self._active:
                    return self._call_cached_op(x, *args)
                try:
                    params = {k: v.data(x.context) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    self._deferred_infer_shape(x, *args)
                    for p in self._params.values():
                        p._finish_deferred_init()
                    params = {k: v.data(x.context) for k, v in self._reg_params.items()}
                return self.hybrid_forward(nd, x, *args, **params)
        if not isinstance(x, _symbol.Symbol):
            raise MXNetError(f"HybridBlock requires the first argument to forward be either Symbol or "
                             f"NDArray, but got {type(x)}")
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

