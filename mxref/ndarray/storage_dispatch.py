"""Storage dispatch at ``invoke``: a sparse kernel where the op has one, else a logged dense fallback.

Both ``invoke`` paths (plain and tuned) hand a call here when an input or an ``out=`` array is
sparse, or when the op can make sparse outputs from dense inputs (``op.sparse_from_dense``):

1. ``op.infer_storage(params, in_stypes)`` names the output stypes if the op has a sparse kernel
   (``fcompute_ex``) for these inputs (MXNet's ``FInferStorageType``); ``None`` means it has not.
2. With a kernel: the outputs are made in their stypes (or the ``out=`` arrays are used), and one
   engine operation reads the inputs' variables, writes the outputs' and calls the kernel on
   numpy containers (``ops/sparse/base.py``); sparse results get fresh pool memory (``_store``).
3. Without one (MXNet's storage fallback): the sparse inputs are cast to dense, the dense kernel
   runs, and sparse ``out=`` arrays get the result cast back. A warning names the op and the
   stypes, once per combination (``MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0`` silences it); ops
   without inputs (an initializer's ``_random_normal(out=row_sparse)``) store their dense result
   without one. The result is the dense kernel's, so a fallback is slower, never wrong.

``invoke`` returns to its dense path when this returns ``None`` (all dense after all).
"""
from __future__ import annotations

import logging
import os
from typing import List, Optional

import numpy as np

from .. import engine, resource
from ..base import MXNetError
from ..engine.base import FnProperty
from ..ops.registry import OpContext, OpDef
from ..ops.sparse.base import RowSparse, empty_of, fromdense, stype_of, todense
from . import imperative
from .ndarray import NDArray, _empty

__all__ = ["wanted", "invoke", "fallback_log", "reset_fallback_log", "node_kernel"]

log = logging.getLogger("mxref.sparse")
_logged: set = set()     # (op, in stypes, out stypes) already reported


def reset_fallback_log() -> None:
    """Forget which fallbacks were reported (tests of the one-time log use it)."""
    _logged.clear()


def fallback_log(op_name: str, in_stypes, out_stypes) -> None:
    """Report a storage fallback once per (op, stypes), as MXNet's ``LogStorageFallback``."""
    key = (op_name, tuple(in_stypes), tuple(out_stypes))
    if key in _logged or os.environ.get("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "1") == "0":
        return
    _logged.add(key)
    log.warning("Storage type fallback detected: operator = %s, input storage types = %s, output "
                "storage types = %s. The operator with default storage type runs on temporary dense "
                "arrays (slower, same result). Set MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0 to silence.",
                op_name, list(in_stypes), list(out_stypes))


def _outs(out) -> Optional[List[NDArray]]:
    if out is None:
        return None
    return [out] if isinstance(out, NDArray) else list(out)


def wanted(op: OpDef, inputs, out) -> bool:
    """Whether this call involves sparse storage (the cheap test both ``invoke`` paths make)."""
    if op.sparse_from_dense:
        return True
    if any(x._sparse for x in inputs):
        return True
    outs = _outs(out)
    return outs is not None and any(getattr(o, "_sparse", False) for o in outs)


def invoke(op: OpDef, params: dict, inputs: List[NDArray], out=None, ctx=None) -> Optional[List[NDArray]]:
    """Run ``op`` with storage types in mind; ``None`` when the call is all dense after all."""
    in_stypes = [x.stype for x in inputs]
    outs = _outs(out)
    out_stypes = op.infer_storage(params, in_stypes) if op.infer_storage is not None else None
    if out_stypes is not None and outs is not None and any(
            o.stype != s for o, s in zip(outs, out_stypes)):
        # The kernel makes other stypes than the out= arrays hold: compute, then cast into them.
        results = invoke(op, params, inputs, None, ctx)
        for r, o in zip(results, outs):
            r.copyto(o)
        return outs + results[len(outs):]
    dense_only = all(s == "default" for s in in_stypes) and (outs is None or not any(o._sparse for o in outs))
    if out_stypes is None or (dense_only and all(s == "default" for s in out_stypes)):
        return None if dense_only else _fallback(op, params, inputs, outs, ctx, in_stypes)
    return _run_sparse(op, params, inputs, outs, ctx, out_stypes)


def _fallback(op, params, inputs, outs, ctx, in_stypes):
    from .sparse import cast_storage  # noqa: PLC0415 - sparse.py imports this package's utils
    if inputs:    # a creation op (``_random_normal(out=rsp)``: an initializer) has nothing to cast
        fallback_log(op.name, in_stypes, [o.stype for o in outs] if outs else ["default"])
    dense_in = [cast_storage(x, "default") if x._sparse else x for x in inputs]
    dense_out = None if outs is None or any(o._sparse for o in outs) else outs
    results = imperative.invoke(op, None, params, dense_in, dense_out, ctx)
    for i in op.mutate_inputs(params):
        if inputs[i]._sparse:           # a state the dense kernel updated in its dense copy
            dense_in[i].copyto(inputs[i])
    if outs is not None and dense_out is None:
        for r, o in zip(results, outs):
            r.copyto(o)
        return outs + results[len(outs):]
    return results


def _run_sparse(op, params, inputs, outs, ctx, out_stypes):
    from .sparse import new_sparse  # noqa: PLC0415 - sparse.py imports this package's utils
    out_shapes, out_dtypes = imperative.infer_outputs(op, params, [x.shape for x in inputs],
                                                      [x._dtype for x in inputs])
    ctx = imperative.infer_context(op, inputs, ctx)
    outputs = list(outs or [])
    for i, o in enumerate(outputs):
        if o.shape != out_shapes[i]:
            raise MXNetError(f"operator {op.name}: out= array {i} has shape {o.shape}, but the "
                             f"result has shape {out_shapes[i]}")
    for s, t, st in list(zip(out_shapes, out_dtypes, out_stypes))[len(outputs):]:
        outputs.append(_empty(s, ctx, t) if st == "default" else new_sparse(st, s, ctx, t))
    mutated = [inputs[i] for i in op.mutate_inputs(params)]
    resources = [resource.request(ctx, kind) for kind in op.resources]
    const_vars = [x._chunk.var for x in inputs]
    mutable_vars = [a._chunk.var for a in outputs + mutated] + [r.var for r in resources]
    is_train, req = imperative.is_training(), ["write"] * len(outputs)
    kernel = op.fcompute_ex

    def run(run_ctx) -> None:
        ins = [x._value() if x._sparse else x._data() for x in inputs]
        vals = [o._value() if o._sparse else o._data() for o in outputs]
        kernel(OpContext(is_train, ctx, resources, run_ctx), params, ins, vals, req)
        for i in op.mutate_inputs(params):      # sparse states the kernel updated (optimizers)
            if inputs[i]._sparse and inputs[i] is not outputs[0]:
                inputs[i]._store(ins[i])
        for o, v in zip(outputs, vals):
            if o._sparse:
                if isinstance(v, RowSparse) and o.stype != "row_sparse":
                    raise MXNetError(f"operator {op.name}: kernel gave row_sparse for a {o.stype} output")
                o._store(v)

    engine.get().push_sync(run, ctx, const_vars, mutable_vars, FnProperty.NORMAL, 0, op.name)
    hook = imperative._record_hook
    if hook is not None:
        hook(op, params, inputs, outputs)
    return outputs


# ---------------------------------------------------------------------------------------------
# Executor nodes: the same dispatch, decided once at bind by the infer_storage_type pass
# ---------------------------------------------------------------------------------------------

def _stype(x) -> str:
    return x.stype if isinstance(x, NDArray) else "default"


def _value_of(x):
    """What a kernel reads from ``x``: a container for a sparse array, a numpy array otherwise."""
    if isinstance(x, NDArray):
        return x._value() if x._sparse else x._data()
    return x


def _as_stype(value, stype: str):
    if stype_of(value) == stype:
        return value
    return fromdense(todense(value), stype)


def node_kernel(op: OpDef, mode: str, in_stypes, out_stypes, dense_kernel):
    """The kernel an executor node with sparse entries runs, ``(octx, params, ins, outs, req)``
    on the node's NDArrays: ``mode`` 'fcompute_ex' calls the op's sparse kernel, 'fallback' the
    dense one on dense copies. Arrays whose stype is not the inferred one (a dense gradient array
    bound where the graph makes a row_sparse one) are converted on the way in and out."""
    fallback = mode == "fallback"
    want_in = ["default"] * len(in_stypes) if fallback else list(in_stypes)
    want_out = ["default"] * len(out_stypes) if fallback else list(out_stypes)

    def run(octx, params, ins, outs, req):
        vin = [_as_stype(_value_of(x), s) for x, s in zip(ins, want_in)]
        vout = []
        for o, s, r in zip(outs, want_out, req):
            if _stype(o) == s and r != "add":
                vout.append(_value_of(o))
            else:
                vout.append(empty_of(s, o.shape, o.dtype))
        kernel = dense_kernel if fallback else op.fcompute_ex
        kernel(octx, params, vin, vout, ["write" if _stype(o) != s or r == "add" else r
                                         for o, s, r in zip(outs, want_out, req)])
        for o, v, s, r in zip(outs, vout, want_out, req):
            if r == "null":
                continue
            if r == "add":
                v = _add(_value_of(o), v)
            if isinstance(o, NDArray) and o._sparse:
                o._store(_as_stype(v, o.stype))
            elif r == "add" or s != "default":
                view = o._data() if isinstance(o, NDArray) else o
                view[...] = todense(v)
        for i in op.mutate_inputs(params):
            x = ins[i]
            if isinstance(x, NDArray) and x._sparse:
                x._store(_as_stype(vin[i], x.stype))
            elif fallback is False and want_in[i] != "default":
                (x._data() if isinstance(x, NDArray) else x)[...] = todense(vin[i])

    run.__name__ = run.__qualname__ = f"{op.name}_{mode}"
    return run


def _add(old, new):
    if isinstance(old, RowSparse) and isinstance(new, RowSparse):
        from ..ops.sparse.elemwise import rsp_sum  # noqa: PLC0415 - the kernel family's helper
        return rsp_sum([old, new])
    total = todense(old) + todense(new)
    return total if isinstance(old, np.ndarray) else fromdense(total, old.stype)
