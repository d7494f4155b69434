"""Generate the ``mx.nd.<op>`` functions from the operator registry (closures, no ``exec``).

Each function keeps the operator's docstring (with a Parameters section built from its ``Param``
table) and an ``inspect.Signature`` like MXNet's generated code, e.g.
``FullyConnected(data=None, weight=None, bias=None, num_hidden=_Null, ..., out=None, name=None, **kwargs)``.
"""
from __future__ import annotations

import inspect
import sys
import types
from typing import Callable, Dict, List

from ..base import MXNetError, _Null
from ..context import Context
from ..ops import registry
from ..ops.call_args import positional_layout
from ..ops.registry import REQUIRED, OpDef
from . import imperative as _imperative
from .ndarray import NDArray, _parse_context

__all__ = ["make_function", "populate", "namespace_of"]

_P = inspect.Parameter


def _default_arguments(op: OpDef) -> List[str]:
    """Input names for the signature; ops whose inputs depend on params show their defaults' list."""
    try:
        defaults = {k: p.default for k, p in op.params.items() if p.default is not REQUIRED}
        return op.list_inputs(defaults)
    except Exception:  # noqa: BLE001 - an input list that needs a required param: show none
        return []


def _signature(op: OpDef, arg_names: List[str]) -> inspect.Signature:
    if op.key_var_num_args is not None:
        return inspect.Signature([_P("data", _P.VAR_POSITIONAL), _P("kwargs", _P.VAR_KEYWORD)])
    params = [_P(n, _P.POSITIONAL_OR_KEYWORD, default=None) for n in arg_names]
    params += [_P(n, _P.POSITIONAL_OR_KEYWORD, default=_Null) for n in op.params if n not in arg_names]
    params += [_P("out", _P.POSITIONAL_OR_KEYWORD, default=None),
               _P("name", _P.POSITIONAL_OR_KEYWORD, default=None), _P("kwargs", _P.VAR_KEYWORD)]
    return inspect.Signature(params)


def _docstring(op: OpDef, arg_names: List[str]) -> str:
    lines = [op.doc.strip() or f"The {op.name} operator.", "", "Parameters", "----------"]
    if op.key_var_num_args is not None:
        lines += ["*data : NDArray", "    The input arrays."]
    for n in arg_names:
        lines += [f"{n} : NDArray", f"    Input {n!r} of {op.name}."]
    for n, p in op.params.items():
        if p.default is REQUIRED:
            lines.append(f"{n} : {p.type}, required")
        else:
            lines.append(f"{n} : {p.type}, optional, default={p.default!r}")
        if p.choices:
            lines.append(f"    One of {list(p.choices)}.")
        if p.doc:
            lines.append(f"    {p.doc}")
    lines += ["out : NDArray, optional", "    The output NDArray to hold the result.", "",
              "Returns", "-------", "out : NDArray or list of NDArrays", "    The output of this function."]
    return "\n".join(lines)


def _context_arg(value):
    if value is None or isinstance(value, Context):
        return value
    if isinstance(value, str):
        return _parse_context(value)
    raise MXNetError(f"ctx must be a Context or a string like 'cpu(0)', got {value!r}")


def make_function(op: OpDef, func_name: str = None) -> Callable:
    """The ``mx.nd`` function for ``op``: binds positional arguments, pushes, returns the output(s)."""
    arg_names = _default_arguments(op)
    variadic = op.key_var_num_args
    takes_ctx = "ctx" in op.params
    input_set = frozenset(arg_names)

    def fn(*args, **kwargs):
        while args and args[-1] is None:      # trailing inputs left out: ``f(data, None, ...)``
            args = args[:-1]
        out = kwargs.pop("out", None)
        kwargs.pop("name", None)
        ctx = _context_arg(kwargs.get("ctx") if takes_ctx else kwargs.pop("ctx", None))
        # None for a name that is neither a parameter nor a default input is an input left out
        # (``sequence_length=None`` beside ``use_sequence_length=False``), as in MXNet.
        if not op.extra_params:
            for k in [k for k, v in kwargs.items() if v is None and k not in op.params]:
                if k not in input_set:
                    del kwargs[k]
        named = None
        if variadic is not None:
            inputs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
            for v in inputs:
                if not isinstance(v, NDArray):
                    raise MXNetError(f"operator {op.name}: inputs must be NDArrays, got {type(v).__name__}")
            kwargs.setdefault(variadic, len(inputs))
        elif (len(args) <= len(arg_names) and all(isinstance(v, NDArray) for v in args)
              and not any(k in input_set or isinstance(v, NDArray) for k, v in kwargs.items())):
            inputs = list(args)       # the common case: inputs positionally, params by keyword
        else:
            named, lead = _split_arguments(op, arg_names, args, kwargs)
        pkey, params = _imperative.parse_params(op, kwargs)
        if named is not None:
            inputs = _bind_inputs(op, params, named, lead)
        outputs = _imperative.invoke(op, pkey, params, inputs, out, ctx)
        if out is not None:
            return out
        n = op.num_visible_outputs(params) if op._num_visible_outputs is not None else len(outputs)
        return outputs[0] if n == 1 else outputs[:n]

    fn.__name__ = fn.__qualname__ = func_name or op.name
    fn.__module__ = "mxref.ndarray"
    fn.__doc__ = _docstring(op, arg_names)
    fn.__signature__ = _signature(op, arg_names)
    return fn


def _split_arguments(op: OpDef, arg_names: List[str], args: tuple, kwargs: dict):
    """``(named, lead)``: keyword inputs and the leading positional inputs, whose names are only
    known once the parameters are parsed (``Deconvolution(x, w, b, no_bias=False)``).

    Non-array positionals after the leading inputs fill the parameters in order; ``kwargs`` keeps
    the parameters only. ``None`` stands for an input left out, by position or by keyword.
    """
    n_lead, slots, param_names = positional_layout(op, op.name, arg_names, args,
                                                   lambda a: isinstance(a, NDArray))
    named = {}
    for i in range(n_lead, len(args)):
        if i < slots:         # a non-array in an input's place: reported by _bind_inputs
            named[arg_names[i]] = args[i]
        else:
            kwargs[param_names[i - slots]] = args[i]
    for k in list(kwargs):
        v = kwargs[k]
        if k in arg_names or isinstance(v, NDArray) or (v is None and k not in op.params):
            named[k] = kwargs.pop(k)
    return {k: v for k, v in named.items() if v is not None}, args[:n_lead]


def _bind_inputs(op: OpDef, params: dict, named: Dict[str, object], lead: tuple = ()) -> List[NDArray]:
    names = op.list_inputs(params)
    if any(v is not None for v in lead[len(names):]):
        raise MXNetError(f"operator {op.name}: got {len(lead)} positional inputs, but it takes "
                         f"{len(names)} ({', '.join(names)})")
    for n, v in zip(names, lead):
        if v is None:
            continue
        if n in named:
            raise MXNetError(f"operator {op.name}: input '{n}' is given twice (by position and by name)")
        named[n] = v
    extra = [k for k in named if k not in names]
    if extra:
        raise MXNetError(f"operator {op.name}: unknown input(s) {extra} (inputs: {', '.join(names)})")
    missing = [n for n in names if n not in named or named[n] is None]
    if missing:
        raise MXNetError(f"operator {op.name}: missing input(s) {missing}")
    for n in names:
        if not isinstance(named[n], NDArray):
            raise MXNetError(f"operator {op.name}: input '{n}' must be an NDArray, "
                             f"got {type(named[n]).__name__}")
    return [named[n] for n in names]


_PREFIXED = ("contrib", "linalg", "image")   # ``_<space>_x`` -> ``mx.nd.<space>.x``, as MXNet sorts them


def namespace_of(name: str):
    """``(namespace, function name)``: ``_contrib_x`` -> contrib.x, ``_linalg_x`` -> linalg.x,
    ``_image_x`` -> image.x, ``_x`` -> _internal, else op."""
    for space in _PREFIXED:
        if name.startswith(f"_{space}_"):
            return space, name[len(space) + 2:]
    if name.startswith("_"):
        return "_internal", name
    return "op", name


def _late_lookup(mod: types.ModuleType, space: str) -> Callable:
    """Module ``__getattr__`` (PEP 562): operators registered after import appear on first access."""
    prefix = f"_{space}_" if space in _PREFIXED else ""

    def lookup(attr: str):
        name = prefix + attr
        if registry.exists(name) and namespace_of(name) == (space, attr):
            fn = make_function(registry.get(name), name)
            setattr(mod, attr, fn)
            return fn
        raise AttributeError(f"module {mod.__name__!r} has no attribute {attr!r}")

    return lookup


def populate(package) -> None:
    """Create ``package.op``, ``package._internal``, ``package.contrib``, ``package.linalg`` and
    ``package.image`` and fill them (and ``package`` itself with the public ops) from every
    registered operator."""
    spaces = {}
    for space in ("op", "_internal", *_PREFIXED):
        mod = getattr(package, space, None)
        if not isinstance(mod, types.ModuleType):
            mod = types.ModuleType(f"{package.__name__}.{space}", f"Generated mx.nd.{space} functions.")
            mod.__getattr__ = _late_lookup(mod, space)
            setattr(package, space, mod)
            sys.modules[mod.__name__] = mod
        spaces[space] = mod
    for name in registry.list_ops():
        space, short = namespace_of(name)
        # NOTE: vars(), not hasattr(): hasattr would run the late-lookup __getattr__ and create it.
        if short in vars(spaces[space]):
            continue
        fn = make_function(registry.get(name), name)
        setattr(spaces[space], short, fn)
        if space == "op" and name not in vars(package):
            setattr(package, name, fn)
