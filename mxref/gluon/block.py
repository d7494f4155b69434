"""Gluon ``Block``: naming scopes (``dense0_``), children, hooks and parameter files.

``HybridBlock`` and ``SymbolBlock`` live in ``hybrid_block.py`` and are re-exported here.
"""
from __future__ import annotations

import copy
import re
import threading
import warnings
import weakref
from collections import OrderedDict
from typing import Dict, Optional

from .. import initializer
from .. import name as _name
from .. import ndarray as nd
from .. import symbol as _symbol
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .parameter import Parameter, ParameterDict

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


class _BlockScope:
    """The naming scope of a Block: counts its children per kind (``dense0_``, ``dense1_``)."""

    _current = threading.local()

    def __init__(self, block: "Block", weak: bool = False):
        # NOTE: a Block's own scope holds it weakly (``weak=True``): a block holds its scope, and a
        # cycle would keep every block (and a hybridized one's bound executors, with their memory)
        # alive until the cyclic garbage collector happens to run. A scope made for any other
        # object holds it, as MXNet's does (``with _BlockScope(obj):`` may be its only owner).
        self._ref = weakref.ref(block) if weak else (lambda: block)
        self._counter: Dict[str, int] = {}
        self._old_scope = None
        self._name_scope = None

    @property
    def _block(self) -> "Block":
        return self._ref()

    def __deepcopy__(self, memo):
        """The copy belongs to the block's copy (``copy.deepcopy(net)``), not to the original."""
        new = _BlockScope.__new__(_BlockScope)
        memo[id(self)] = new
        new._ref = weakref.ref(copy.deepcopy(self._block, memo))
        new._counter, new._old_scope, new._name_scope = dict(self._counter), None, None
        return new

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
        raise ValueError(f"When hybridized, the {what} of HybridBlock must be (nested) list of "
                         f"Symbol or NDArray, but got {args} of type {type(args).__name__}")
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
                raise ValueError("We do not support passing types that are not None when the initial "
                                 "HybridBlock has received NoneType and has been hybridized. "
                                 f"Received arg = {args[0]}, fmt = {fmt}.")
            return None, args[1:]
        return args[:fmt], args[fmt:]
    ret = []
    for f in fmt:
        res, args = _regroup(args, f)
        ret.append(res)
    return ret, args


def _gather_type_ctx_info(args):
    """``(has_symbol, has_ndarray, contexts, first context)`` of (nested) arguments."""
    if isinstance(args, NDArray):
        return False, True, {args.context}, args.context
    if isinstance(args, _symbol.Symbol):
        return True, False, set(), None
    has_sym = has_nd = False
    ctxs, first = set(), None
    if isinstance(args, (list, tuple)):
        for a in args:
            s, n, c, f = _gather_type_ctx_info(a)
            has_sym, has_nd = has_sym or s, has_nd or n
            ctxs |= c
            first = f if first is None else first
    return has_sym, has_nd, ctxs, first


def _flatten_any(x) -> list:
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten_any(item)]
    return [x]


def _shape_str(x) -> str:
    """Shapes of (nested) arrays as MXNet's summary prints them: ``(2, 5)`` or ``(2, 5), (1, 2, 3)``."""
    def shapes(v):
        if isinstance(v, (list, tuple)):
            return [shapes(i) for i in v]
        return v.shape if isinstance(v, NDArray) else v
    s = shapes(x)
    if isinstance(s, list):
        return str(s)[1:-1] if len(s) > 1 else str(s[0])
    return str(s)


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
        self._scope = _BlockScope(self, weak=True)
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
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        pattern = re.compile(select) if select else None
        for k, v in self._params.items():
            if pattern is None or pattern.match(k):
                ret._params[k] = v
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _check_container_with_block(self) -> None:
        """Warn about Blocks kept in a list, tuple or dict attribute: they are not children, so
        their parameters are missed by ``collect_params`` (MXNet warns the same way)."""
        children = set(map(id, self._children.values()))

        def holds_unregistered(data) -> bool:
            if isinstance(data, (list, tuple)):
                return any(holds_unregistered(v) for v in data)
            if isinstance(data, dict):
                return any(holds_unregistered(v) for v in data.values())
            return isinstance(data, Block) and id(data) not in children

        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith("__") or k == "_children") \
                    and holds_unregistered(v):
                warnings.warn(f'"{type(self).__name__}.{k}" is an unregistered container with Blocks. '
                              "Note that Blocks inside the list, tuple or dict will not be registered "
                              "automatically. Make sure to register them using register_child() or "
                              "switching to nn.Sequential/nn.HybridSequential instead. ", stacklevel=3)

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

    def save_params(self, filename: str) -> None:
        """[Deprecated, MXNet 1.x] Save parameters under their full names minus this block's prefix
        (``ParameterDict.save``'s format); use ``save_parameters``, or ``export`` for SymbolBlock."""
        warnings.warn("save_params is deprecated. Please use save_parameters. Note that if you want "
                      "load from SymbolBlock later, please use export instead.", DeprecationWarning,
                      stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename: str, ctx=None, allow_missing: bool = False,
                    ignore_extra: bool = False) -> None:
        """[Deprecated, MXNet 1.x] ``load_parameters``, which reads both file formats."""
        warnings.warn("load_params is deprecated. Please use load_parameters.", DeprecationWarning,
                      stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

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

    def summary(self, *inputs) -> None:
        """Print each layer's output shape and parameter count for one forward on ``inputs``.

        The layout is MXNet's; layers only traced during deferred initialization (symbol
        outputs) are not listed, and the block must not be hybridized.
        """
        rows = [("Input", _shape_str(inputs), 0)]
        seen, totals = set(), {"total": 0, "trainable": 0, "shared": 0}

        def hook(block, _, outputs):
            flat = _flatten_any(outputs)
            if any(isinstance(o, _symbol.Symbol) for o in flat):
                return
            n = 0
            for p in block.params.values():
                size = p.data().size
                n += size
                totals["trainable"] += 0 if p.grad_req == "null" else size
                totals["shared"] += size if id(p) in seen else 0
                seen.add(id(p))
            totals["total"] += n
            rows.append((f"{type(block).__name__}-{len(rows)}", _shape_str(outputs), n))

        def register(block):
            if getattr(block, "_active", False):
                raise AssertionError(f'"{block.name}" must not be hybridized to print summary.')
            if type(block).__name__ not in ("Sequential", "HybridSequential"):
                handles.append(block.register_forward_hook(hook))

        handles: list = []
        try:
            self.apply(register)
            self(*inputs)
        finally:
            for h in handles:
                h.detach()
        line = "{:>20}  {:>42} {:>15}"
        out = ["-" * 80, line.format("Layer (type)", "Output Shape", "Param #"), "=" * 80]
        out += [line.format(name, shape, n) for name, shape, n in rows]
        unique = sum(p.data().size for p in self.collect_params().values())
        out += ["=" * 80, "Parameters in forward computation graph, duplicate included",
                f"   Total params: {totals['total']}", f"   Trainable params: {totals['trainable']}",
                f"   Non-trainable params: {totals['total'] - totals['trainable']}",
                f"Shared params in forward computation graph: {totals['shared']}",
                f"Unique parameters in model: {unique}", "-" * 80]
        print("\n".join(out))

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


from .hybrid_block import HybridBlock, SymbolBlock  # noqa: E402 - they subclass Block
