"""From the operator registry to symbols: ``create`` (apply an op), operators on ``Symbol``, and
the generated ``mx.sym.<op>`` functions with their namespaces.

Functions are closures made from each ``OpDef`` (no ``exec``): each carries the op's docstring and
an ``inspect.Signature``, so ``help(mx.sym.FullyConnected)`` and grep both work. Operators
registered after this module is imported are found on first use (module ``__getattr__``).
"""
from __future__ import annotations

import inspect
import sys
import types
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from .. import attribute
from .. import name as _name
from ..base import MXNetError, _Null, numeric_types
from ..graph import Node, NodeEntry
from ..ops import registry
from ..ops.call_args import positional_layout
from . import json_format
from .symbol import Symbol

__all__ = ["create", "wrapper", "populate", "NAMESPACES"]


# -------------------------------------------------------------------------------------------------
# Applying an operator
# -------------------------------------------------------------------------------------------------

def _attr_str(value) -> str:
    """An attribute value as MXNet's Python front end writes it (``str``, dtypes by name)."""
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return np.dtype(value).name
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = tuple(value.tolist())
    if isinstance(value, np.generic):
        return str(value.item())
    if isinstance(value, tuple):      # NOTE: str() of a tuple shows numpy ints as 'np.int64(5)'
        return "(" + ", ".join(_attr_str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_attr_str(v) for v in value) + "]"
    return str(value)


def _single_output(sym, what: str) -> NodeEntry:
    if not isinstance(sym, Symbol):
        raise MXNetError(f"{what} must be a Symbol, got {type(sym).__name__}")
    if len(sym._outputs) != 1:
        raise MXNetError(f"{what} must be a single-output Symbol, got a group of {len(sym._outputs)}")
    return sym._outputs[0]


def _param_key(op: registry.OpDef, key: str, value) -> str:
    """Where keyword ``key`` of an operator call is stored: ``lr_mult=0`` (any hidden key) becomes
    attribute ``__lr_mult__``, and ``__mood__``-style keys stay attributes, as MXNet's
    ``MXSymbolCreateAtomicSymbol`` does; ``weight_lr_mult=0`` is MXNet's deprecated form of a
    variable attribute and is refused with MXNet's advice."""
    for hidden in attribute.HIDDEN_KEYS:
        if key.startswith(hidden):
            return f"__{key}__"
        if key.endswith("_" + hidden):
            raise MXNetError(f"operator {op.name}: setting variable attributes with {key} is "
                             f"deprecated. please instead use\nw = Variable({hidden}={value})\n"
                             f"sym = YourSymbolName({key[:-len(hidden) - 1]}=w)")
    return key


def create(op: registry.OpDef, hint: str, args: Sequence = (), inputs: Dict[str, "Symbol"] = None,
           params: Dict = None, name: Optional[str] = None, attr: Dict[str, str] = None) -> Symbol:
    """Apply operator ``op`` to symbols: the common path of every ``mx.sym.<op>`` and operator.

    ``args`` are positional inputs, ``inputs`` keyword inputs by argument name; inputs left out
    become new variables ``<name>_<argument>`` (``fullyconnected0_weight``). ``hint`` is the
    lowercased name the op was called by, which auto-naming counts (``_plus0`` for ``a + b``).
    """
    inputs = dict(inputs or {})
    name = _name.current().get(name, hint)
    attrs = {_param_key(op, k, v): _attr_str(v) for k, v in (params or {}).items() if v is not _Null}
    if op.key_var_num_args and (args or inputs) and op.key_var_num_args in op.params:
        attrs[op.key_var_num_args] = str(len(args) or len(inputs))
    for key, value in attribute.current().get(attr).items():
        if not isinstance(value, str):
            raise ValueError(f"{op.name}: attribute {key!r} must be a string, got {value!r}")
        attrs[attribute.hide_key(key)] = value
    node = Node(op, name, attrs)
    arg_names = op.list_inputs(node.params)  # parsing here raises errors at call time
    if len(args) > len(arg_names):
        raise MXNetError(f"operator {op.name}: got {len(args)} positional inputs, but it takes "
                         f"{len(arg_names)} ({arg_names})")
    given: Dict[str, NodeEntry] = {}
    for arg_name, sym in zip(arg_names, args):
        if sym is None:          # an input left out in the middle: a variable is made below
            continue
        given[arg_name] = _single_output(sym, f"operator {op.name}: input '{arg_name}'")
    for key, sym in inputs.items():
        if not arg_names:
            # NOTE: nnvm's Compose drops keyword inputs given to an operator that takes none
            # (MXNet's test feeds random.randn(..., data=sym) to _random_normal this way).
            continue
        if key not in arg_names:
            raise MXNetError(f"operator {op.name}: unknown input '{key}' (inputs: {arg_names})")
        if key in given:
            raise MXNetError(f"operator {op.name}: input '{key}' is given twice")
        given[key] = _single_output(sym, f"operator {op.name}: input '{key}'")
    for arg_name in arg_names:
        if arg_name not in given:
            # NOTE: MXNet copies the op's attributes onto the variables it creates for it
            given[arg_name] = NodeEntry(Node(None, f"{name}_{arg_name}", dict(attrs)), 0, 0)
    node.inputs = [given[a] for a in arg_names]
    _update_versions(node)
    json_format.apply_input_var_attrs(node)
    return Symbol([NodeEntry(node, i, 0) for i in range(op.num_visible_outputs(node.params))])


def _update_versions(node: Node) -> None:
    """Read inputs see a variable's current version; each mutation (aux update) bumps it."""
    mutated = set(node.op.mutate_inputs(node.params))
    for i, e in enumerate(node.inputs):
        if i in mutated:
            if not e.node.is_variable:
                raise MXNetError(f"operator {node.op.name} ({node.name}): input {i} is mutated by "
                                 f"the operator, so it must be a Variable, not {e.node.name}")
            e.node.extra["version"] = json_format.variable_version(e.node) + 1
            node.inputs[i] = NodeEntry(e.node, e.index, e.node.extra["version"])
        elif e.node.is_variable:
            node.inputs[i] = NodeEntry(e.node, e.index, json_format.variable_version(e.node))


# -------------------------------------------------------------------------------------------------
# Operators on symbols: arithmetic and comparisons name their nodes as MXNet does (``_plus0``,
# ``_plusscalar0``); the node records the operator's canonical name (``elemwise_add``).
# -------------------------------------------------------------------------------------------------

# MXNet's Python calls the CamelCase aliases; an op library may register only the canonical name.
_CANONICAL = {"_Plus": "elemwise_add", "_Minus": "elemwise_sub", "_Mul": "elemwise_mul",
              "_Div": "elemwise_div", "_Mod": "_mod", "_Power": "_power", "_PlusScalar": "_plus_scalar",
              "_MinusScalar": "_minus_scalar", "_RMinusScalar": "_rminus_scalar",
              "_MulScalar": "_mul_scalar", "_DivScalar": "_div_scalar", "_RDivScalar": "_rdiv_scalar",
              "_ModScalar": "_mod_scalar", "_RModScalar": "_rmod_scalar", "_PowerScalar": "_power_scalar"}


def _apply(op_name: str, args: Sequence[Symbol], params: Dict = None) -> Symbol:
    """Apply an operator by the name MXNet's Python uses (the name also gives the node's name)."""
    found = op_name if registry.exists(op_name) else _CANONICAL.get(op_name, op_name)
    return create(registry.get(found), op_name.lower(), args, params=params)


def _binary(sym_op: str, scalar_op: str, rscalar_op: Optional[str] = None):
    """``__add__``-style method: a symbol operand uses ``sym_op``, a number ``scalar_op``."""
    def method(self, other):
        if isinstance(other, Symbol):
            return _apply(sym_op, [self, other])
        if isinstance(other, numeric_types):
            return _apply(scalar_op, [self], {"scalar": other})
        raise TypeError(f"type {type(other).__name__} not supported")

    def rmethod(self, other):
        if isinstance(other, numeric_types):
            return _apply(rscalar_op or scalar_op, [self], {"scalar": other})
        raise TypeError(f"type {type(other).__name__} not supported")
    return method, rmethod


for _names, (_sym_op, _scalar_op, _rscalar_op) in {
    ("__add__", "__radd__"): ("_Plus", "_PlusScalar", None),
    ("__sub__", "__rsub__"): ("_Minus", "_MinusScalar", "_RMinusScalar"),
    ("__mul__", "__rmul__"): ("_Mul", "_MulScalar", None),
    ("__truediv__", "__rtruediv__"): ("_Div", "_DivScalar", "_RDivScalar"),
    ("__mod__", "__rmod__"): ("_Mod", "_ModScalar", "_RModScalar"),
    ("__pow__", "__rpow__"): ("_Power", "_PowerScalar", "_rpower_scalar"),
}.items():
    for _attr_name, _fn in zip(_names, _binary(_sym_op, _scalar_op, _rscalar_op)):
        setattr(Symbol, _attr_name, _fn)

for _attr_name, _op in {"__eq__": "_equal", "__ne__": "_not_equal", "__gt__": "_greater",
                        "__ge__": "_greater_equal", "__lt__": "_lesser", "__le__": "_lesser_equal"}.items():
    setattr(Symbol, _attr_name, _binary(_op, _op + "_scalar")[0])

Symbol.__neg__ = lambda self: _apply("_MulScalar", [self], {"scalar": -1.0})
Symbol.__abs__ = lambda self: self.abs()
Symbol.__div__, Symbol.__rdiv__ = Symbol.__truediv__, Symbol.__rtruediv__


def _op_method(op_name: str):
    """``sym.reshape(...)`` == ``mx.sym.reshape(sym, ...)``; looked up when called, so late ops work."""
    def method(self, *args, **kwargs):
        return wrapper(op_name)(self, *args, **kwargs)
    method.__name__ = op_name
    method.__doc__ = f"Convenience fluent method for ``mx.sym.{op_name}(self, ...)``."
    return method


_FLUENT = (
    "abs arccos arccosh arcsin arcsinh arctan arctanh argmax argmax_channel argmin argsort "
    "broadcast_axes broadcast_like broadcast_to cbrt ceil clip cos cosh degrees depth_to_space diag "
    "exp expand_dims expm1 fix flatten flip floor log log10 log1p log2 log_softmax max mean min "
    "nanprod nansum norm one_hot ones_like pad pick prod radians rcbrt reciprocal relu repeat "
    "reshape reshape_like rint round rsqrt shape_array sigmoid sign sin sinh size_array slice "
    "slice_axis slice_like softmax softmin sort space_to_depth split sqrt square squeeze "
    "sum swapaxes take tan tanh tile topk transpose trunc zeros_like").split()
for _op in _FLUENT:
    setattr(Symbol, _op, _op_method(_op))
Symbol.astype = lambda self, dtype: _op_method("cast")(self, dtype=dtype)


# -------------------------------------------------------------------------------------------------
# Generated functions: mx.sym.<op>, and the namespaces MXNet sorts them into
# -------------------------------------------------------------------------------------------------

_PREFIXES = ("_contrib_", "_linalg_", "_sparse_", "_image_", "_random_")
NAMESPACES: Dict[str, types.ModuleType] = {}
_WRAPPERS: Dict[str, Callable] = {}


def _place(op_name: str):
    """``(namespace, function name)`` of a registered name, as MXNet's ``_init_op_module`` sorts it."""
    for prefix in _PREFIXES:
        if op_name.startswith(prefix) and (prefix != "_random_" or op_name.endswith("_like")):
            return prefix[1:-1], op_name[len(prefix):]
    return ("_internal" if op_name.startswith("_") else "op"), op_name


def _input_names(op: registry.OpDef) -> Optional[List[str]]:
    """Input names under default parameters (``None`` if they cannot be known without the user's)."""
    if op.key_var_num_args:
        return None
    defaults = {k: (None if p.default is registry.REQUIRED else p.default) for k, p in op.params.items()}
    try:
        return op.list_inputs(defaults)
    except Exception:  # a names function that needs real parameter values
        return None


def _positional_params(op: registry.OpDef, func_name: str, inputs: Optional[List[str]], args: tuple,
                       kwargs: dict) -> tuple:
    """The leading Symbol inputs of ``args``; the values after them fill the parameters in order,
    after the input slots, as in MXNet's generated signature (``sym.reshape(x, (2, 3))``)."""
    if inputs is None:                         # variadic inputs: MXNet's signature is (*data, ...)
        return args
    n_lead, slots, param_names = positional_layout(op, func_name, inputs, args,
                                                   lambda a: isinstance(a, Symbol))
    for i in range(n_lead, len(args)):
        if i < slots:            # a non-Symbol in an input's place: left for the caller's error
            return args
        if param_names[i - slots] in kwargs:
            raise TypeError(f"{func_name}() got multiple values for argument '{param_names[i - slots]}'")
        kwargs[param_names[i - slots]] = args[i]
    lead = args[:n_lead]
    while lead and lead[-1] is None:            # inputs left out at the end become variables
        lead = lead[:-1]
    return lead


def _signature(op: registry.OpDef, inputs: Optional[List[str]]) -> inspect.Signature:
    P = inspect.Parameter
    if inputs is None:
        params = [P("data", P.VAR_POSITIONAL)]
    else:
        params = [P(n, P.POSITIONAL_OR_KEYWORD, default=None) for n in inputs]
    params += [P(k, P.KEYWORD_ONLY, default=_Null) for k in op.params if k != op.key_var_num_args]
    params += [P("name", P.KEYWORD_ONLY, default=None), P("attr", P.KEYWORD_ONLY, default=None),
               P("kwargs", P.VAR_KEYWORD)]
    return inspect.Signature(params)


def _docstring(op: registry.OpDef, inputs: Optional[List[str]]) -> str:
    lines = [op.doc.strip() or f"The {op.name} operator.", "", "Parameters", "----------"]
    if inputs is None:
        lines += ["*data : Symbol", "    The inputs (their number sets "
                  f"``{op.key_var_num_args}``)." if op.key_var_num_args else "    The inputs."]
    for n in inputs or ():
        lines += [f"{n} : Symbol, optional", f"    Input '{n}'; a new variable when left out."]
    for k, p in op.params.items():
        req = "required" if p.default is registry.REQUIRED else f"optional, default={p.default!r}"
        choices = f", one of {list(p.choices)}" if p.choices else ""
        lines += [f"{k} : {p.type}, {req}{choices}", f"    {p.doc}" if p.doc else "    "]
    lines += ["name : str, optional", "    The node's name (default: automatic, see mx.name).",
              "attr : dict of str to str, optional", "    Attributes of the node.",
              "", "Returns", "-------", "Symbol"]
    return "\n".join(line.rstrip() for line in lines)


def wrapper(op_name: str) -> Callable:
    """The generated function for a registered operator name (canonical or alias), cached."""
    fn = _WRAPPERS.get(op_name)
    if fn is not None:
        return fn
    op = registry.get(op_name)
    module, func_name = _place(op_name)
    hint = func_name.lower()
    inputs = _input_names(op)

    def creator(*args, name: Optional[str] = None, attr: Dict[str, str] = None, **kwargs):
        args = _positional_params(op, func_name, inputs, args, kwargs)
        for i, a in enumerate(args):
            if a is not None and not isinstance(a, Symbol):
                raise MXNetError(f"{func_name}: positional argument {i} must be a Symbol (an input), "
                                 f"got {type(a).__name__}; give parameters by keyword")
        sym_inputs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
        if op.key_var_num_args and args and sym_inputs:
            raise TypeError(f"{func_name}: variable-length inputs go either all positional or all "
                            "by keyword, not both")
        # NOTE: None for a name that is no parameter is an input left out (``sequence_length=None``
        # beside ``use_sequence_length=False``), as in MXNet's generated signatures.
        params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol) and v is not _Null
                  and not (v is None and ((inputs is not None and k in inputs)
                                          or (k not in op.params and not op.extra_params)))}
        # MXNet turns these keywords into the node's hidden attributes (``lr_mult=0`` ->
        # ``__lr_mult__``), which the variables it creates for the node inherit.
        hidden = [k for k in params if k in attribute.HIDDEN_KEYS and k not in op.params]
        if hidden:
            attr = dict(attr or {}, **{k: _attr_str(params.pop(k)) for k in hidden})
        return create(op, hint, args, sym_inputs, params, name, attr)

    creator.__name__ = creator.__qualname__ = func_name
    creator.__module__ = "mxref.symbol" if module == "op" else f"mxref.symbol.{module}"
    creator.__doc__ = _docstring(op, inputs)
    creator.__signature__ = _signature(op, inputs)
    _WRAPPERS[op_name] = creator
    return creator


def _random_front() -> Dict[str, Callable]:
    """``mx.sym.random``'s hand-written samplers (``random_front.py``: MXNet's front end)."""
    from . import random_front
    return {n: getattr(random_front, n) for n in random_front.__all__}


def _lookup(module: str, attr_name: str) -> Callable:
    """Find ``attr_name`` in namespace ``module`` among the registered ops (module ``__getattr__``)."""
    if module == "random" and attr_name in _random_front():
        return _random_front()[attr_name]
    if module == "sparse":      # mx.sym.sparse.<x>: the _sparse_<x> op if any, else the plain op
        for op_name in (f"_sparse_{attr_name}", attr_name, f"_{attr_name}"):
            if registry.exists(op_name):
                return wrapper(op_name)
    candidates = {"op": attr_name, "_internal": attr_name}
    op_name = candidates.get(module, f"_{module}_{attr_name}")
    if registry.exists(op_name) and _place(op_name) == (module, attr_name):
        return wrapper(op_name)
    raise AttributeError(f"module 'mxref.symbol.{module}' has no attribute {attr_name!r} "
                         "(no such operator is registered)")


def _namespace(short: str) -> types.ModuleType:
    mod = NAMESPACES.get(short)
    if mod is None:
        mod = types.ModuleType(f"mxref.symbol.{short}", f"Generated symbol functions: {short} namespace.")

        def __getattr__(attr_name, _short=short, _mod=mod):
            if attr_name.startswith("__"):
                raise AttributeError(attr_name)
            fn = _lookup(_short, attr_name)
            setattr(_mod, attr_name, fn)
            return fn
        mod.__getattr__ = __getattr__
        NAMESPACES[short] = sys.modules[mod.__name__] = mod
    return mod


def populate(package_globals: Dict = None) -> None:
    """Create the function of every operator registered so far (idempotent).

    Fills the namespaces ``op``, ``_internal``, ``contrib``, ``linalg``, ``sparse``, ``image`` and
    ``random``; ``op``'s functions also go into ``package_globals`` (``mx.sym.FullyConnected``).
    """
    for short in ("op", "_internal", "contrib", "linalg", "sparse", "image", "random"):
        _namespace(short)
    for op_name in registry.list_ops():
        module, func_name = _place(op_name)
        fn = wrapper(op_name)
        setattr(NAMESPACES[module], func_name, fn)
        if module == "op" and package_globals is not None:
            package_globals.setdefault(func_name, fn)
    for func_name, fn in _random_front().items():
        setattr(NAMESPACES["random"], func_name, fn)
