"""The operator registry: one ``OpDef`` per operator, registered and looked up by MXNet's name.

An ``OpDef`` is the whole contract of an operator (DESIGN.md §Operators):

* ``params``        — typed parameters with defaults and validation (``Param``)
* ``arguments``     — input names (a list, or a function of the parsed params: ``no_bias`` drops ``bias``)
* ``aux_states``    — auxiliary inputs the operator mutates (BatchNorm's ``moving_mean``)
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

Inputs seen by ``infer_shape``, ``infer_type`` and ``fcompute`` are ``arguments + aux_states``, in
that order (nnvm's convention: auxiliary states are inputs the operator mutates).

The kernel table (the last section of this file) is keyed by ``(op name, device type)``: each
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

from .._ext import switch as _switch
from ..base import MXNetError, _Null, normalize_dtype
from ..graph import node as _graph_node

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
                 extra_params: bool = False):
        self.name = name
        self.fcompute = fcompute
        self._arguments = arguments
        self._outputs = outputs
        self._aux_states = aux_states
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
        """Indices of inputs the kernel writes (the auxiliary states)."""
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
                if allow_extra:
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


# The graph layer finds operators by name through this registry (``make_node`` in gradients).
_graph_node.set_op_lookup(get)


def exists(name: str) -> bool:
    return name in _OPS


def list_ops() -> List[str]:
    """Every registered name, aliases included, sorted."""
    return sorted(_OPS)


# ---------------------------------------------------------------------------------------------
# The kernel table: one entry per (operator, device type)
# ---------------------------------------------------------------------------------------------
# Each op's ``fcompute`` is its reference kernel (numpy, on the host). Fast kernels register here
# for a device type: Cython loops for 'cpu', CUDA kernels for 'gpu'. A fast kernel may decline a
# call (``applies``); on the host the reference then runs, on a GPU that is an error.
#
# ``_KERNELS`` is the *active* table, ``(op, device) -> callable``, rebuilt whenever a kernel is
# registered or removed or the switch flips (reference only drops every host entry). Hot paths
# read it directly: ``mxref/ndarray/imperative.py`` caches the kernel on its plan and resolves it
# again when ``len(_KERNELS)`` changes, which every rebuild that changes its meaning does.

_HOST = ("cpu", "cpu_pinned", "cpu_shared")      # device types whose memory numpy reads directly


class Kernel:
    """One registered fast kernel.

    ``fn`` has ``fcompute``'s signature ``(octx, params, inputs, outputs, req)``. ``applies``,
    ``(params, inputs, outputs, req) -> bool``, says whether ``fn`` takes a call (``None``: every
    call). ``exact`` promises the reference's bits; otherwise ``tol`` maps a dtype name to the
    ``(rtol, atol)`` it stays within, and the kernel harness (``mxref.test_utils.check_kernels``)
    holds it to that.
    """

    __slots__ = ("op", "device", "fn", "applies", "name", "exact", "tol")

    def __init__(self, op: str, device: str, fn: Callable, applies: Optional[Callable], name: str,
                 exact: bool, tol: Dict[str, Tuple[float, float]]):
        self.op, self.device, self.fn, self.applies, self.name = op, device, fn, applies, name
        self.exact, self.tol = exact, dict(tol or {})

    def takes(self, params, inputs, outputs, req) -> bool:
        """Whether this kernel runs the call (its ``applies`` predicate)."""
        return self.applies is None or bool(self.applies(params, inputs, outputs, req))

    def tolerance(self, dtype) -> Tuple[float, float]:
        """``(rtol, atol)`` against the reference for outputs of ``dtype``; ``(0, 0)`` when exact."""
        if self.exact:
            return 0.0, 0.0
        name = np.dtype(dtype).name
        if name not in self.tol:
            raise MXNetError(f"kernel {self.name} states no tolerance for {name}")
        return self.tol[name]

    def __repr__(self):
        return f"<Kernel {self.name} for ({self.op}, {self.device})>"


_FAST: Dict[Tuple[str, str], List[Kernel]] = {}     # every registered kernel, in priority order
_KERNELS: Dict[Tuple[str, str], Callable] = {}       # the active table (see above)
_DISPATCH: Dict[Tuple[str, str], Callable] = {}      # the callable of each pair, made once


def _dispatcher(opdef: OpDef, device: str, kernels: List[Kernel]) -> Callable:
    """The callable ``get_kernel`` hands out for an op with fast kernels on ``device``: the first
    kernel that takes the call, else (host) the reference. ``kernels`` is the live list."""
    if device == "cpu":
        def run(octx, params, inputs, outputs, req):
            for k in kernels:
                if k.applies is None or k.applies(params, inputs, outputs, req):
                    return k.fn(octx, params, inputs, outputs, req)
            return opdef.fcompute(octx, params, inputs, outputs, req)
    else:
        def run(octx, params, inputs, outputs, req):
            for k in kernels:
                if k.applies is None or k.applies(params, inputs, outputs, req):
                    return k.fn(octx, params, inputs, outputs, req)
            shapes = [(tuple(x.shape), str(x.dtype)) for x in inputs]
            raise MXNetError(f"operator {opdef.name}: no '{device}' kernel takes inputs {shapes} "
                             f"(registered: {', '.join(k.name for k in kernels)}); it does not "
                             "fall back to the host")
    run.__name__ = run.__qualname__ = f"{opdef.name}_{device}_kernels"
    return run


def _rebuild(*_) -> None:
    reference = _switch.reference_only()
    active = {}
    for key, kernels in _FAST.items():
        if kernels and not (reference and key[1] == "cpu"):
            if key not in _DISPATCH:      # one callable per pair: it reads the live list
                _DISPATCH[key] = _dispatcher(_OPS[key[0]], key[1], kernels)
            active[key] = _DISPATCH[key]
    # Key by key (each dict operation is atomic), so a concurrent lookup never sees an empty table.
    for key in [k for k in _KERNELS if k not in active]:
        del _KERNELS[key]
    _KERNELS.update(active)


def register_kernel(op_name: str, device_type: str, fn: Callable, *, applies: Callable = None,
                    name: str = None, exact: bool = True,
                    tol: Dict[str, Tuple[float, float]] = None) -> Kernel:
    """Register a fast kernel for ``op_name`` on ``device_type`` (``'cpu'`` or ``'gpu'``).

    ``applies(params, inputs, outputs, req)`` tells whether ``fn`` takes a call; when it does not,
    the next kernel registered for the pair is asked, then (on ``'cpu'``) the reference runs.
    ``exact=False`` with ``tol`` (dtype name -> ``(rtol, atol)``) states how close to the
    reference it stays, where it cannot promise the same bits. ``name``
    defaults to ``fn``'s qualified name. Returns the entry (``unregister_kernel`` takes it).

    Example::

        register_kernel("sgd_update", "cpu", c_loop_update, applies=contiguous_float,
                        name="optimizer_kernels.sgd_update")
    """
    if op_name not in _OPS:
        raise MXNetError(f"register_kernel: operator {op_name!r} is not registered")
    if device_type not in ("cpu", "gpu"):
        raise MXNetError(f"register_kernel: device type must be 'cpu' or 'gpu', got {device_type!r}")
    if not exact and not tol:
        raise MXNetError(f"register_kernel({op_name!r}): a kernel that is not exact must state its tol")
    kernel = Kernel(op_name, device_type, fn, applies, name or getattr(fn, "__qualname__", repr(fn)),
                    exact, tol)
    _FAST.setdefault((op_name, device_type), []).append(kernel)
    _rebuild()
    return kernel


def unregister_kernel(kernel: Kernel) -> None:
    """Remove a kernel ``register_kernel`` returned (tests that register a temporary one)."""
    kernels = _FAST.get((kernel.op, kernel.device), [])
    if kernel in kernels:
        kernels.remove(kernel)
        if not kernels:
            del _FAST[(kernel.op, kernel.device)]
            _DISPATCH.pop((kernel.op, kernel.device), None)
    _rebuild()


def list_kernels(op_name: str = None, device_type: str = None) -> List[Kernel]:
    """The registered fast kernels (active or not), optionally of one op and/or device type."""
    return [k for (op, dev), ks in sorted(_FAST.items()) for k in ks
            if (op_name is None or op == op_name) and (device_type is None or dev == device_type)]


def get_kernel(opdef: OpDef, device_type: str) -> Callable:
    """The kernel to run ``opdef`` on ``device_type``.

    On the host (``cpu``, ``cpu_pinned``, ``cpu_shared``): the op's fast kernels, each asked in
    turn and the reference run when none takes the call; only the reference when the switch says
    so (``MXREF_ENABLE_EXT=0``, ``mxref._ext.reference_kernels()``) or none is registered. On any
    other device: its registered kernels, and a GPU op without one is an error; it never silently
    runs on the host.

    Called once per node at bind (``executor_plan.compile_nodes``), per distinct call in
    imperative mode (cached on the plan, ``mxref/ndarray/imperative.py``), and by
    ``symbol.eval_numpy`` and the device kvstore's reduction.
    """
    host = device_type in _HOST
    fn = _KERNELS.get((opdef.name, "cpu" if host else device_type))
    if fn is not None:
        return fn
    if host:
        if opdef.fcompute is None:
            raise MXNetError(f"operator {opdef.name} has no compute function")
        return opdef.fcompute
    raise MXNetError(f"operator {opdef.name} has no kernel for device type '{device_type}'")


def fast_kernel_for(op_name: str, device_type: str, params, inputs, outputs, req) -> Optional[Kernel]:
    """The fast kernel ``get_kernel``'s callable would run for this call now, or ``None`` when the
    reference would (none registered, none takes it, or the switch says reference only)."""
    host = device_type in _HOST
    if host and _switch.reference_only():
        return None
    for k in _FAST.get((op_name, "cpu" if host else device_type), ()):
        if k.takes(params, inputs, outputs, req):
            return k
    return None


def reference_kernel(opdef: OpDef) -> Callable:
    """The op's reference kernel (numpy, host memory), whatever the switch and the table say."""
    if opdef.fcompute is None:
        raise MXNetError(f"operator {opdef.name} has no compute function")
    return opdef.fcompute


_switch.on_change(_rebuild)
