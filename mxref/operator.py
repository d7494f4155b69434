"""Custom operators written in Python: ``CustomOp``, ``CustomOpProp``, ``register`` and the ``Custom`` op.

A custom operator is two user classes (MXNet 1.x's ``mx.operator`` API):

* a ``CustomOpProp`` subclass, registered under a name with ``@mx.operator.register("name")``,
  describes the operator: its argument/output/auxiliary names, shape and type inference, and
  which values its backward reads. It is built from the keyword arguments of the call, as strings.
* a ``CustomOp`` subclass, made by the prop's ``create_operator``, computes:
  ``forward(is_train, req, in_data, out_data, aux)`` and
  ``backward(req, out_grad, in_data, out_data, in_grad, aux)``, writing results with
  ``self.assign(dst, req, src)``.

Both ``mx.nd.Custom(*inputs, op_type="name", **kwargs)`` and ``mx.sym.Custom(...)`` apply one
registered operator, ``Custom``, whose gradient is a ``_backward_Custom`` node; so custom operators
work imperatively, under autograd, and in symbols bound to executors.

How the user's Python runs inside the engine
--------------------------------------------
The ``Custom`` kernel runs on an engine worker like any kernel. It hands the user NDArrays that
*borrow* the kernel's numpy buffers, each with a fresh engine variable, and calls the user's method
inside ``engine.base.inline_scope``: every NDArray operation the method issues runs at once on that
same thread (nothing waits for a worker, in particular not for the one running the method), and
waits such as ``asnumpy()`` are allowed. With one worker thread this is what keeps a custom operator
from deadlocking. After the method returns, the written arrays are checked for errors, which then
fail the ``Custom`` op and surface at the caller's next wait.

NOTE: the arrays passed to ``forward``/``backward`` are valid only during the call (the memory
belongs to the operator's inputs and outputs); keep ``asnumpy()`` copies, not the arrays. Reading
an array from outside (a global, ``self.something``) that still has writes in flight waits for them
on another worker; pass such arrays as inputs or auxiliary states instead, so the engine orders them.

NOTE: one ``CustomOp`` instance serves every call with the same parameters, context, input shapes
and dtypes (MXNet makes one per executor node). Keep per-call data in ``out_data`` or ``aux``.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple, Type

import numpy as np

from . import engine as _engine
from . import ndarray as _nd
from . import profiler as _profiler
from .base import DTYPE_NP_TO_MX, MXNetError
from .engine.base import inline_scope
from .graph import NodeEntry
from .ndarray import imperative as _imperative
from .ndarray.chunk import Chunk, _free_nothing
from .ndarray.ndarray import NDArray
from .ops import registry
from .ops.arguments import OperatorArguments, get_operator_arguments  # noqa: F401
from .ops.nn._util import backward_node
from .ops.registry import OpDef, Param

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators", "Custom",
           "OperatorArguments", "get_operator_arguments"]


class CustomOp:
    """Base class of the computation of a custom operator: override ``forward`` and ``backward``."""

    def __init__(self):
        pass

    def forward(self, is_train: bool, req: List[str], in_data: List[NDArray], out_data: List[NDArray],
                aux: List[NDArray]) -> None:
        """Compute ``out_data`` from ``in_data``; write each output with ``self.assign``.

        ``req[i]`` ('write', 'inplace', 'add' or 'null') says how to store output ``i``.
        """
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, req: List[str], out_grad: List[NDArray], in_data: List[NDArray],
                 out_data: List[NDArray], in_grad: List[NDArray], aux: List[NDArray]) -> None:
        """Compute ``in_grad`` (one per argument) from the output gradients and forward values."""
        raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")

    def assign(self, dst: NDArray, req: str, src) -> None:
        """Store ``src`` into ``dst`` as ``req`` asks: skip ('null'), overwrite, or add ('add')."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise MXNetError(f"CustomOp.assign: unknown req {req!r} (expected null, write, inplace or add)")


class CustomOpProp:
    """Base class of the description of a custom operator (names, shapes, types, dependencies).

    Parameters
    ----------
    need_top_grad : bool
        Whether ``backward`` reads the output gradients; ``False`` makes the operator a loss layer
        (an executor's ``backward()`` then needs no head gradient).
    """

    def __init__(self, need_top_grad: bool = True):
        self.need_top_grad_ = need_top_grad

    def list_arguments(self) -> List[str]:
        return ["data"]

    def list_outputs(self) -> List[str]:
        return ["output"]

    def list_auxiliary_states(self) -> List[str]:
        return []

    def infer_shape(self, in_shape: List[List[int]]):
        """``(argument shapes, output shapes, aux shapes)``; by default every output is like input 0."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type: List[type]):
        """``(argument types, output types, aux types)``; by default all take input 0's type."""
        t = in_type[0]
        return ([t] * len(in_type), [t] * len(self.list_outputs()),
                [t] * len(self.list_auxiliary_states()))

    def declare_backward_dependency(self, out_grad: List[int], in_data: List[int],
                                    out_data: List[int]) -> List[int]:
        """The values ``backward`` reads (mxref keeps all of them; this is for compatibility)."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes: List[List[int]], in_dtypes: List[int]) -> CustomOp:
        """Make the ``CustomOp`` that computes this operator.

        ``in_shapes`` and ``in_dtypes`` cover arguments then auxiliary states; dtypes are MXNet's
        codes (0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, ...), as MXNet passes them.
        """
        return CustomOp()


_PROPS: Dict[str, Type[CustomOpProp]] = {}


def register(reg_name: str) -> Callable[[Type[CustomOpProp]], Type[CustomOpProp]]:
    """Class decorator: make a ``CustomOpProp`` subclass usable as ``Custom(..., op_type=reg_name)``.

    Registering a name again replaces the earlier class (MXNet warns and does the same).
    """
    def do_register(prop_cls: Type[CustomOpProp]) -> Type[CustomOpProp]:
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise MXNetError(f"mx.operator.register({reg_name!r}): expected a CustomOpProp subclass, "
                             f"got {prop_cls!r}")
        _PROPS[reg_name] = prop_cls
        _prop_cache.clear()
        _op_cache.clear()
        return prop_cls
    return do_register


def get_all_registered_operators() -> List[str]:
    """Names of every registered operator (built-in and ``Custom`` types)."""
    return sorted(set(registry.list_ops()) | set(_PROPS))


# ---------------------------------------------------------------------------------------------
# From parameters to the user's objects (cached: the same call repeats every iteration)
# ---------------------------------------------------------------------------------------------

_prop_cache: Dict[tuple, CustomOpProp] = {}
_op_cache: Dict[tuple, CustomOp] = {}
_CACHE_LIMIT = 1024


def _prop(params: dict) -> CustomOpProp:
    """The ``CustomOpProp`` for a ``Custom`` call's parameters (``op_type`` plus string kwargs)."""
    key = tuple(sorted(params.items()))
    prop = _prop_cache.get(key)
    if prop is None:
        op_type = params.get("op_type")
        cls = _PROPS.get(op_type)
        if cls is None:
            raise MXNetError(f"operator Custom: op_type {op_type!r} is not registered "
                             f"(registered: {sorted(_PROPS) or 'none'}); use @mx.operator.register")
        kwargs = {k: v for k, v in params.items() if k != "op_type"}
        try:
            prop = cls(**kwargs)
        except TypeError as exc:
            raise MXNetError(f"operator Custom ({op_type}): {cls.__name__}({kwargs}) failed: {exc}") from None
        if len(_prop_cache) >= _CACHE_LIMIT:
            _prop_cache.clear()
        _prop_cache[key] = prop
    return prop


def _operator(params: dict, prop: CustomOpProp, ctx, ins: Sequence[np.ndarray]) -> CustomOp:
    """The ``CustomOp`` instance for these parameters, context and input shapes/dtypes."""
    shapes = tuple(x.shape for x in ins)
    dtypes = tuple(x.dtype for x in ins)
    key = (tuple(sorted(params.items())), ctx, shapes, dtypes)
    op = _op_cache.get(key)
    if op is None:
        # MXNet hands create_operator its dtype codes (0 is float32), not numpy types.
        op = prop.create_operator(ctx, [list(s) for s in shapes], [DTYPE_NP_TO_MX[d] for d in dtypes])
        if not isinstance(op, CustomOp):
            raise MXNetError(f"operator Custom ({params['op_type']}): create_operator must return a "
                             f"CustomOp, got {type(op).__name__}")
        if len(_op_cache) >= _CACHE_LIMIT:
            _op_cache.clear()
        _op_cache[key] = op
    return op


def _counts(prop: CustomOpProp) -> Tuple[int, int, int]:
    return len(prop.list_arguments()), len(prop.list_outputs()), len(prop.list_auxiliary_states())


# ---------------------------------------------------------------------------------------------
# NDArrays over the kernel's buffers
# ---------------------------------------------------------------------------------------------

class _Borrowed:
    """A storage-handle look-alike for memory the kernel owns: ``Chunk.data`` reads ``buffer``."""

    __slots__ = ("buffer",)

    def __init__(self, buffer: np.ndarray):
        self.buffer = buffer


class _BorrowedChunk(Chunk):
    """A chunk over a kernel buffer: its memory is never freed here, only its variable retired."""

    __slots__ = ()

    def __del__(self):
        try:
            eng = _engine._engine
            if eng is self.engine and eng is not None:
                eng.delete_variable(_free_nothing, self.ctx, self.var)
        except Exception:  # noqa: BLE001 - as Chunk.__del__: never raise from a finalizer
            pass


def _wrap(arr: np.ndarray, ctx) -> Tuple[NDArray, bool]:
    """``(NDArray, borrowed)``: a view of ``arr`` with a fresh variable, or a copy if not contiguous."""
    borrowed = arr.flags.c_contiguous
    src = arr if borrowed else np.ascontiguousarray(arr)
    chunk = _BorrowedChunk(src.nbytes, ctx, _engine.get().new_variable(),
                           _Borrowed(src.reshape(-1).view(np.uint8)))
    nd = NDArray(chunk, tuple(src.shape), src.dtype, 0)
    nd._np = src
    return nd, borrowed


def _run_user(what: str, params: dict, fn: Callable, arrays: List[Tuple[NDArray, bool]],
              targets: Sequence[np.ndarray], written: Sequence[int]) -> None:
    """Call ``fn`` in an inline scope, then check and (for copies) store the arrays it wrote.
    The profiler sees its work as ``'<op_type>::...'`` (``'_backward_<op_type>::...'``)."""
    scope = params["op_type"] if what == "forward" else f"_backward_{params['op_type']}"
    with inline_scope(), _profiler.custom_op_scope(scope):
        try:
            fn()
            for i in written:
                nd, borrowed = arrays[i]
                nd.wait_to_read()    # ran inline already; raises the error of a failed write
                if not borrowed:
                    targets[i][...] = nd._np
        except Exception as exc:  # noqa: BLE001 - user code: name the operator, keep the cause
            text = str(exc) if isinstance(exc, MXNetError) else f"{type(exc).__name__}: {exc}"
            raise MXNetError(f"operator Custom ({params['op_type']}): {what} failed: {text}") from exc


def _forward(octx, params, inputs, outputs, req):
    prop = _prop(params)
    nargs, nout, naux = _counts(prop)
    op = _operator(params, prop, octx.ctx, inputs)
    arrays = [_wrap(x, octx.ctx) for x in (*inputs, *outputs)]
    nds = [a[0] for a in arrays]
    in_data, aux, out_data = nds[:nargs], nds[nargs:nargs + naux], nds[nargs + naux:]
    is_train = bool(octx.is_train)
    _run_user("forward", params,
              lambda: op.forward(is_train=is_train, req=list(req), in_data=in_data, out_data=out_data,
                                 aux=aux),
              arrays, [*inputs, *outputs], range(nargs, len(arrays)))


def _backward(octx, params, inputs, outputs, req):
    prop = _prop(params)
    nargs, nout, naux = _counts(prop)
    ngrad = nout if prop.need_top_grad_ else 0
    in_slice = slice(ngrad, ngrad + nargs)
    aux_slice = slice(ngrad + nargs + nout, ngrad + nargs + nout + naux)
    op = _operator(params, prop, octx.ctx, inputs[in_slice] + inputs[aux_slice])
    arrays = [_wrap(x, octx.ctx) for x in (*inputs, *outputs)]
    nds = [a[0] for a in arrays]
    out_grad = nds[:ngrad] if ngrad else [None] * nout
    in_data, out_data = nds[in_slice], nds[ngrad + nargs:ngrad + nargs + nout]
    aux, in_grad = nds[aux_slice], nds[len(inputs):]
    _run_user("backward", params,
              lambda: op.backward(req=list(req), out_grad=out_grad, in_data=in_data, out_data=out_data,
                                  in_grad=in_grad, aux=aux),
              arrays, [*inputs, *outputs],
              [*range(aux_slice.start, aux_slice.stop), *range(len(inputs), len(arrays))])


# ---------------------------------------------------------------------------------------------
# Shapes, types and the gradient: asked of the user's prop
# ---------------------------------------------------------------------------------------------

def _user_call(params: dict, what: str, fn: Callable, partial: bool):
    """Call a prop method; with unknown inputs (``partial``) a failure means 'not yet known'."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - user code: name the operator in the error
        if partial:
            return None
        raise MXNetError(f"operator Custom ({params.get('op_type')}): {what} failed: "
                         f"{type(exc).__name__}: {exc}") from None


def _split3(ret, naux: int):
    """A prop answer ``(args, outs[, aux])`` as three lists."""
    ret = list(ret)
    if len(ret) == 2:
        ret.append([None] * naux)
    if len(ret) != 3:
        raise MXNetError("operator Custom: infer_shape/infer_type must return (in, out[, aux])")
    return [list(r) for r in ret]


def _infer_shape(params, in_shapes):
    prop = _prop(params)
    nargs, nout, naux = _counts(prop)
    unknown = [s is None for s in in_shapes]
    if in_shapes and all(unknown):             # (an op without inputs knows its shapes at once)
        return list(in_shapes), [None] * nout
    given = [list(s) if s is not None else [] for s in in_shapes]
    ret = _user_call(params, "infer_shape", lambda: prop.infer_shape(given[:nargs]),
                     any(unknown))
    if ret is None:
        return list(in_shapes), [None] * nout
    args, outs, aux = _split3(ret, naux)
    if len(args) != nargs or len(outs) != nout or len(aux) != naux:
        raise MXNetError(f"operator Custom ({params['op_type']}): infer_shape returned {len(args)}/"
                         f"{len(outs)}/{len(aux)} shapes, expected {nargs}/{nout}/{naux}")
    shape = lambda s: None if s is None else tuple(int(d) for d in s)  # noqa: E731
    return [shape(s) for s in args + aux], [shape(s) for s in outs]


def _infer_type(params, in_types):
    prop = _prop(params)
    nargs, nout, naux = _counts(prop)
    if in_types and in_types[0] is None:
        return list(in_types), [None] * nout
    given = [None if t is None else np.dtype(t).type for t in in_types[:nargs]]
    ret = _user_call(params, "infer_type", lambda: prop.infer_type(given), False)
    args, outs, aux = _split3(ret, naux)
    dtype = lambda t: None if t is None else np.dtype(t)  # noqa: E731
    return [dtype(t) for t in args + aux], [dtype(t) for t in outs]


def _gradient(node, ograds):
    prop = _prop(node.params)
    nargs, nout, naux = _counts(prop)
    ins = list(ograds) if prop.need_top_grad_ else []
    ins += node.inputs[:nargs] + [NodeEntry(node, i, 0) for i in range(nout)] + node.inputs[nargs:]
    bwd = backward_node(node, "_backward_Custom", ins)
    return [NodeEntry(bwd, i, 0) for i in range(nargs)] + [None] * naux


def _backward_names(p):
    prop = _prop(p)
    args, outs = prop.list_arguments(), prop.list_outputs()
    grads = [f"{o}_grad" for o in outs] if prop.need_top_grad_ else []
    return grads + args + outs + prop.list_auxiliary_states()


def _backward_shape(params, in_shapes):
    prop = _prop(params)
    start = len(prop.list_outputs()) if prop.need_top_grad_ else 0
    return list(in_shapes), list(in_shapes[start:start + len(prop.list_arguments())])


def _backward_type(params, in_types):
    prop = _prop(params)
    start = len(prop.list_outputs()) if prop.need_top_grad_ else 0
    return list(in_types), list(in_types[start:start + len(prop.list_arguments())])


_PARAMS = {"op_type": Param("str", doc="The name the CustomOpProp was registered under.")}

registry.register(OpDef(
    "Custom", _forward, params=_PARAMS, extra_params=True,
    arguments=lambda p: _prop(p).list_arguments(), outputs=lambda p: _prop(p).list_outputs(),
    aux_states=lambda p: _prop(p).list_auxiliary_states(),
    infer_shape=_infer_shape, infer_type=_infer_type, gradient=_gradient,
    doc="Apply a custom operator written in Python (see mxref.operator); other keyword arguments "
        "go to its CustomOpProp as strings."))
registry.register(OpDef(
    "_backward_Custom", _backward, params=_PARAMS, extra_params=True, arguments=_backward_names,
    outputs=lambda p: [f"{a}_grad" for a in _prop(p).list_arguments()],
    infer_shape=_backward_shape, infer_type=_backward_type))


# ---------------------------------------------------------------------------------------------
# mx.nd.Custom (mx.sym.Custom is the generated symbol function)
# ---------------------------------------------------------------------------------------------

def Custom(*data: NDArray, op_type: str = None, out=None, name: str = None, **kwargs):
    """Apply the custom operator registered as ``op_type`` to NDArrays.

    Inputs go positionally in the prop's ``list_arguments() + list_auxiliary_states()`` order, or
    by those names as keywords; every other keyword argument goes to the prop's constructor as a
    string. Returns one NDArray, or a list when the operator has several outputs.

    >>> y = mx.nd.Custom(x, op_type="sqr")           # doctest: +SKIP
    """
    if op_type is None:
        raise MXNetError("operator Custom: required argument 'op_type' is missing")
    named = {k: kwargs.pop(k) for k in [k for k, v in kwargs.items() if isinstance(v, NDArray)]}
    kwargs["op_type"] = op_type
    op = registry.get("Custom")
    pkey, params = _imperative.parse_params(op, kwargs)
    names = op.list_inputs(params)
    inputs = list(data)
    if named:
        if inputs:
            raise MXNetError("operator Custom: give inputs either all positionally or all by name")
        missing = [n for n in names if n not in named]
        extra = [n for n in named if n not in names]
        if missing or extra:
            raise MXNetError(f"operator Custom ({op_type}): inputs are {names}; missing {missing}, "
                             f"unknown {extra}")
        inputs = [named[n] for n in names]
    for i, x in enumerate(inputs):
        if not isinstance(x, NDArray):
            raise MXNetError(f"operator Custom ({op_type}): input {i} must be an NDArray, "
                             f"got {type(x).__name__}")
    outputs = _imperative.invoke(op, pkey, params, inputs, out)
    if out is not None:
        return out
    return outputs[0] if len(outputs) == 1 else outputs


# The generated mx.nd function cannot know a Custom call's inputs before op_type is parsed.
_nd.Custom = _nd.op.Custom = Custom

# MXNet's deprecated numpy operators, run as custom operators (mxref/operator_numpy.py).
from .operator_numpy import NumpyOp, PythonOp  # noqa: E402, F401

__all__ += ["NumpyOp", "PythonOp"]
