"""The operator registry: one ``OpDef`` per operator, registered and looked up by MXNet's name.

An ``OpDef`` is the whole contract of an operator (``docs/howto/add_an_operator.md``):

* ``params``        — typed parameters with defaults and validation (``Param``)
* ``arguments``     — input names (a list, or a function of the parsed params: ``no_bias`` drops ``bias``)
* ``aux_states``    — auxiliary inputs the operator mutates (BatchNorm's ``moving_mean``)
* ``mutate``        — ``params -> [input index]``: mutated inputs that sit among the arguments
                      instead of after them (the fused ``multi_sgd_mom_update`` interleaves
                      ``weight_i, grad_i, mom_i``; nnvm's ``FMutateInputs``). Default: the aux states
* ``outputs``       — output names; ``num_visible_outputs`` hides trailing ones (BatchNorm's mean/var)
* ``infer_shape``   — ``(params, in_shapes) -> (in_shapes, out_shapes)``; ``None`` marks an unknown
                      shape, 0 an unknown dimension; may fill in input shapes (weights from data)
* ``infer_type``    — ``(params, in_types) -> (in_types, out_types)`` with numpy dtypes or ``None``
* ``fcompute``      — the numpy reference kernel ``(octx, params, inputs, outputs, req)``; it writes
                      ``outputs[i]`` according to ``req[i]`` in {'null', 'write', 'inplace', 'add'}.
                      It is the specification: fast kernels are compared with it
* ``gradient``      — ``(node, ograds) -> [NodeEntry or None per input]``; builds graph nodes of
                      other operators (usually ``_backward_<name>``), so gradients are graphs too
* ``inplace``       — ``[(input_index, output_index)]`` pairs that may share memory
* ``inplace_identity`` — one bool per ``inplace`` pair: the output *is* the input (``identity``,
                      ``Reshape``), so it may share memory even while the input is read elsewhere
* ``ignore_inputs`` — input indices the kernel never reads (``zeros_like`` only needs the shape),
                      so they do not keep their memory alive (nnvm's ``FIgnoreInputs``)
* ``resources``     — ``['random']`` / ``['temp_space']``; the engine orders their use
* ``loss_layer``    — backward may start without head gradients (``SoftmaxOutput``, ``MakeLoss``)
* ``extra_params``  — keep keyword arguments missing from ``params`` as strings (``Custom`` hands
                      them to the user's ``CustomOpProp``, as MXNet does)
* ``dynamic_shape`` — the output shape depends on the input values (``boolean_mask``): a
                      hybridized block holding it runs op by op instead of binding an executor
* ``infer_storage`` — ``(params, in_stypes) -> out_stypes or None``: the storage combinations the
                      op has a sparse kernel for (``None``: none, run dense after a fallback);
                      set by ``ops/sparse/base.register_storage`` with ``fcompute_ex``, the kernel
                      on ``ops/sparse/base.CSR`` / ``RowSparse`` containers (MXNet's
                      ``FInferStorageType`` / ``FComputeEx``). ``sparse_from_dense`` marks ops
                      that can make a sparse output from dense inputs (``cast_storage``)

Inputs seen by ``infer_shape``, ``infer_type`` and ``fcompute`` are ``arguments + aux_states``, in
that order (nnvm's convention: auxiliary states are inputs the operator mutates).

The kernel table (``kernels.py``, re-exported here) is keyed by ``(op name, device type)``: each
op's ``fcompute`` is its reference entry, Cython loops register as 'cpu' kernels and CUDA kernels
as 'gpu' ones with ``register_kernel(op, device, fn, applies=..., exact=..., tol=...)``, where
``applies`` lets a kernel decline a call it does not handle (the host then runs the reference).
``get_kernel(opdef, device)`` resolves what runs, honouring the one switch (``mxref/_ext/switch.py``:
``MXREF_ENABLE_EXT=0`` or a ``reference_kernels()`` block means references only); a GPU op without
a GPU kernel is an error. Executors call it once per node at bind, the imperative path once per
distinct call (cached on its plan). ``list_kernels`` and ``fast_kernel_for`` are for tests and
``mxref.info()``; ``mxref.op_check`` compares every registered kernel with its reference. Op
files never branch on the device and never test whether an extension is built.
"""
from __future__ import annotations

import ast
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..base import MXNetError, _Null, normalize_dtype
from ..graph import node as _graph_node
from .kernels import (  # noqa: F401
    _KERNELS,
    Kernel,
    fast_kernel_for,
    get_kernel,
    list_kernels,
    reference_kernel,
    register_kernel,
    unregister_kernel,
)

__all__ = ["Param", "OpDef", "OpContext", "register", "get", "exists", "list_ops", "Kernel",
           "register_kernel", "unregister_kernel", "list_kernels", "get_kernel", "fast_kernel_for",
           "reference_kernel",
           "assign", "write", "REQUIRED", "elemwise_shape", "elemwise_type"]

REQUIRED = object()   # a parameter without a default

Shape = Optional[Tuple[int, ...]]


# ---------------------------------------------------------------------------------------------
# Parameters: MXNet passes every attribute as a string in JSON, Python passes real values.
# ---------------------------------------------------------------------------------------------

def _parse_literal(text: str):
    text = text.strip()
    if text in ("None", "none"):
        return None
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _to_bool(v):
    if isinstance(v, str):
        v = _parse_literal(v)
    if isinstance(v, (bool, int, np.integer, np.bool_)):
        return bool(v)
    raise ValueError(f"expected a boolean, got {v!r}")


def _to_int(v):
    if isinstance(v, str):
        v = _parse_literal(v)
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return int(v)
    raise ValueError(f"expected an integer, got {v!r}")


def _to_float(v):
    if isinstance(v, str):
        v = _parse_literal(v)
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return float(v)
    raise ValueError(f"expected a number, got {v!r}")


def _to_shape(v):
    """A shape / tuple of ints: ``(2, 3)``, ``[2, 3]``, ``'(2, 3)'``, ``'(2,3)'`` or a single int."""
    if isinstance(v, str):
        v = _parse_literal(v.replace("L", ""))
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, np.ndarray) and v.ndim == 1:      # e.g. shape=np.array([2, 3])
        v = v.tolist()
    if isinstance(v, (tuple, list)):
        return tuple(_to_int(x) for x in v)
    raise ValueError(f"expected a shape (tuple of ints), got {v!r}")


def _to_float_tuple(v):
    if isinstance(v, str):
        v = _parse_literal(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        return (float(v),)
    if isinstance(v, (tuple, list)):
        return tuple(_to_float(x) for x in v)
    raise ValueError(f"expected a tuple of numbers, got {v!r}")


def _to_str(v):
    return str(v)


def _to_dtype(v):
    if v is None or v == "None":
        return None
    return normalize_dtype(v)


def _to_int_or_none(v):
    if v is None or (isinstance(v, str) and v.strip() in ("None", "none", "")):
        return None
    return _to_int(v)


def _to_float_or_none(v):
    if v is None or (isinstance(v, str) and v.strip() in ("None", "none", "")):
        return None
    return _to_float(v)


def _to_axis(v):
    """``axis`` of reductions: ``None`` (all), an int, or a tuple of ints (``()`` means all too)."""
    if isinstance(v, str):
        v = _parse_literal(v)
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (tuple, list)):
        return tuple(_to_int(x) for x in v)
    raise ValueError(f"expected an axis (int or tuple of ints), got {v!r}")


_PARSERS: Dict[str, Callable[[Any], Any]] = {
    "int": _to_int, "float": _to_float, "bool": _to_bool, "str": _to_str, "shape": _to_shape,
    "float_tuple": _to_float_tuple, "dtype": _to_dtype, "int_or_none": _to_int_or_none,
    "float_or_none": _to_float_or_none, "axis": _to_axis, "any": lambda v: v,
}


def _format_value(v) -> str:
    """MXNet's string form of a parameter value, as written into JSON graphs."""
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, tuple):
        return "(" + ", ".join(_format_value(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return str(v)


class Param:
    """One operator parameter: its type name (see ``_PARSERS``), default, allowed values and doc."""

    __slots__ = ("type", "default", "choices", "doc", "parse")

    def __init__(self, type: str, default=REQUIRED, doc: str = "", choices: Sequence = None):
        if type not in _PARSERS:
            raise ValueError(f"unknown parameter type {type!r}")
        self.type = type
        self.default = default
        self.choices = tuple(choices) if choices is not None else None
        self.doc = doc
        self.parse = _PARSERS[type]


# ---------------------------------------------------------------------------------------------
# OpDef
# ---------------------------------------------------------------------------------------------

class OpContext:
    """What a kernel learns at run time: training or inference, the context, and its resources.

    ``rng`` is a ``numpy.random.Generator`` (the 'random' resource); ``temp_space(nbytes)`` returns
    scratch memory (the 'temp_space' resource). Both are engine variables the op writes.
    """

    __slots__ = ("is_train", "ctx", "resources", "run_ctx")

    def __init__(self, is_train: bool = False, ctx=None, resources: Sequence = (), run_ctx=None):
        self.is_train = is_train
        self.ctx = ctx
        self.resources = resources
        self.run_ctx = run_ctx

    @property
    def rng(self) -> np.random.Generator:
        for r in self.resources:
            if r.kind == "random":
                return r.generator
        raise MXNetError("operator asked for a random generator but did not declare the 'random' resource")

    def temp_space(self, nbytes: int) -> np.ndarray:
        for r in self.resources:
            if r.kind == "temp_space":
                return r.get_space(nbytes)
        raise MXNetError("operator asked for temp space but did not declare the 'temp_space' resource")


def assign(out: np.ndarray, req: str, value) -> None:
    """Write ``value`` into ``out`` as ``req`` says (MXNet's ``KERNEL_ASSIGN``)."""
    if req == "null":
        return
    if req == "add":
        out += value
    else:  # write / inplace
        if out is not value:
            out[...] = value


def write(out: np.ndarray, req: str, fill: Callable[[np.ndarray], None]) -> None:
    """Let ``fill(dst)`` compute a result straight into ``out`` (no temporary, no copy), as ``req``
    says: ``'add'`` goes through a temporary added in, ``'null'`` computes nothing.

    ``out`` may be an input itself (an optimizer's ``out=weight``), so ``fill`` must write ``dst``
    only with elementwise ufuncs after its last read of that input.
    """
    if req == "null":
        return
    if req == "add":
        tmp = np.empty_like(out)
        fill(tmp)
        out += tmp
    else:
        fill(out)


def elemwise_shape(params, in_shapes):
    """Shape rule for same-shape elementwise ops: every input and the output share one shape."""
    known = None
    for s in in_shapes:
        if s is not None and 0 not in s:
            known = s
            break
    if known is None:
        known = next((s for s in in_shapes if s is not None), None)
    for s in in_shapes:
        if s is not None and known is not None and len(s) == len(known):
            if any(a and b and a != b for a, b in zip(s, known)):
                raise MXNetError(f"shapes {tuple(in_shapes)} are inconsistent: elementwise inputs "
                                 "must have the same shape")
    return [known] * len(in_shapes), [known]


def elemwise_type(params, in_types):
    """Type rule for ops whose inputs and output share one dtype."""
    known = next((t for t in in_types if t is not None), None)
    for t in in_types:
        if t is not None and known is not None and t != known:
            raise MXNetError(f"dtypes {[getattr(x, 'name', x) for x in in_types]} are inconsistent: "
                             "inputs must have the same dtype")
    return [known] * len(in_types), [known]


NameList = Union[Sequence[str], Callable[[dict], List[str]]]


class OpDef:
    """Everything mxref knows about one operator. See the module docstring for each field."""

    def __init__(self, name: str, fcompute: Callable = None, *, arguments: NameList = ("data",),
                 outputs: NameList = ("output",), aux_states: NameList = (),
                 params: Dict[str, Param] = None, infer_shape: Callable = elemwise_shape,
                 infer_type: Callable = elemwise_type, gradient: Callable = None,
                 inplace: Sequence[Tuple[int, int]] = (), resources: Sequence[str] = (),
                 num_visible_outputs: Union[int, Callable, None] = None, loss_layer: bool = False,
                 key_var_num_args: Optional[str] = None, doc: str = "", aliases: Sequence[str] = (),
                 validate: Callable = None, hidden: bool = False,
                 inplace_identity: Sequence[bool] = (), ignore_inputs: Sequence[int] = (),
                 extra_params: bool = False, mutate: Callable = None):
        self.name = name
        self.fcompute = fcompute
        self._arguments = arguments
        self._outputs = outputs
        self._aux_states = aux_states
        self._mutate = mutate
        self.params = dict(params or {})
        self.infer_shape = infer_shape
        self.infer_type = infer_type
        self.gradient = gradient
        self.inplace = tuple(inplace)
        self.inplace_identity = tuple(inplace_identity) or (False,) * len(self.inplace)
        if len(self.inplace_identity) != len(self.inplace):
            raise MXNetError(f"operator {name}: inplace_identity needs one flag per inplace pair")
        self.ignore_inputs = tuple(ignore_inputs)
        self.resources = tuple(resources)
        self._num_visible_outputs = num_visible_outputs
        self.loss_layer = loss_layer
        self.key_var_num_args = key_var_num_args
        self.doc = doc
        self.aliases = tuple(aliases)
        self.validate = validate
        self.hidden = hidden or name.startswith("_")
        self.extra_params = extra_params
        # Storage types (ops/sparse/base.py fills these in for ops with sparse kernels).
        self.infer_storage: Optional[Callable] = None
        self.fcompute_ex: Optional[Callable] = None
        self.sparse_from_dense = False
        # ``params -> Context`` for an operator whose output lives on a device its parameters name
        # (``_CrossDeviceCopy``); ``None``: outputs live where the inputs are.
        self.output_ctx: Optional[Callable] = None
        self.dynamic_shape = False

    # -- names of inputs and outputs -------------------------------------------------------
    def list_arguments(self, params: dict) -> List[str]:
        a = self._arguments
        return list(a(params) if callable(a) else a)

    def list_aux_states(self, params: dict) -> List[str]:
        a = self._aux_states
        return list(a(params) if callable(a) else a)

    def list_inputs(self, params: dict) -> List[str]:
        return self.list_arguments(params) + self.list_aux_states(params)

    def list_outputs(self, params: dict) -> List[str]:
        a = self._outputs
        return list(a(params) if callable(a) else a)

    def num_inputs(self, params: dict) -> int:
        return len(self.list_inputs(params))

    def num_outputs(self, params: dict) -> int:
        return len(self.list_outputs(params))

    def num_visible_outputs(self, params: dict) -> int:
        n = self._num_visible_outputs
        if n is None:
            return self.num_outputs(params)
        return n(params) if callable(n) else n

    def mutate_inputs(self, params: dict) -> List[int]:
        """Indices of inputs the kernel writes (the auxiliary states, or ``mutate``'s list)."""
        if self._mutate is not None:
            return list(self._mutate(params))
        nargs = len(self.list_arguments(params))
        return list(range(nargs, nargs + len(self.list_aux_states(params))))

    # -- parameters ------------------------------------------------------------------------
    def parse_params(self, kwargs: Dict[str, Any], allow_extra: bool = False) -> Dict[str, Any]:
        """Typed parameters with defaults filled in; ``MXNetError`` names the op and argument at fault.

        ``allow_extra`` keeps unknown keys (used for JSON graphs, whose attrs also carry
        ``__shape__``-style user attributes; those are filtered out before this call).
        """
        out = {}
        for key, value in kwargs.items():
            spec = self.params.get(key)
            if spec is None:
                if self.extra_params:
                    if value is not _Null:
                        out[key] = str(value)
                    continue
                # NOTE: an MXNet operator without a parameter struct has no parser to refuse
                # anything: it keeps unknown keywords as plain attributes and ignores them
                # (``broadcast_maximum(a, b, axis=1)`` runs), so only ops with parameters reject.
                if allow_extra or not self.params:
                    continue
                known = ", ".join(sorted(self.params)) or "none"
                raise MXNetError(f"operator {self.name}: unknown argument '{key}' "
                                 f"(known arguments: {known})")
            if value is _Null:
                continue
            try:
                parsed = spec.parse(value)
            except (ValueError, TypeError, MXNetError) as exc:
                raise MXNetError(f"operator {self.name}: invalid value {value!r} for argument "
                                 f"'{key}': {exc}") from None
            if spec.choices is not None and parsed not in spec.choices:
                raise MXNetError(f"operator {self.name}: argument '{key}' must be one of "
                                 f"{list(spec.choices)}, got {parsed!r}")
            out[key] = parsed
        for key, spec in self.params.items():
            if key not in out:
                if spec.default is REQUIRED:
                    raise MXNetError(f"operator {self.name}: required argument '{key}' is missing")
                out[key] = spec.default
        if self.validate is not None:
            self.validate(out)
        return out

    def format_params(self, params: Dict[str, Any], only: Sequence[str] = None) -> Dict[str, str]:
        """Parameters as MXNet's JSON strings (``only`` limits it to the keys the user set)."""
        keys = self.params if only is None else [k for k in only if k in self.params]
        if self.extra_params:
            keys = list(keys) + [k for k in (params if only is None else only)
                                 if k not in self.params and k in params]
        return {k: _format_value(params[k]) for k in keys if k in params}

    def __repr__(self):
        return f"<OpDef {self.name}>"


# ---------------------------------------------------------------------------------------------
# The registries
# ---------------------------------------------------------------------------------------------

_OPS: Dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    """Add an operator (and its aliases); registering the same name twice is an error."""
    for name in (opdef.name, *opdef.aliases):
        if name in _OPS:
            raise MXNetError(f"operator {name} is already registered")
        _OPS[name] = opdef
    return opdef


def get(name: str) -> OpDef:
    try:
        return _OPS[name]
    except KeyError:
        raise MXNetError(f"operator {name!r} is not registered") from None


# The graph layer finds operators by name through this registry (``make_node`` in gradients), and
# so does the kernel table (``kernels.py``, through ``graph.node.lookup_op``), for each op's
# reference kernel.
_graph_node.set_op_lookup(get)


def exists(name: str) -> bool:
    return name in _OPS


def list_ops() -> List[str]:
    """Every registered name, aliases included, sorted."""
    return sorted(_OPS)
