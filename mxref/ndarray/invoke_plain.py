"""The plain ``invoke``: the steps of imperative dispatch one by one, with no caches and no tricks.

This is the specification of ``mx.nd``'s dispatch (MXNet's ``Imperative::Invoke``): read it first.
``imperative.py`` holds the tuned ``invoke``, which does the same steps and must give the same
results bit for bit (``tests/test_plain_paths.py`` checks it on the op test cases); it is
the one that runs unless ``MXREF_PLAIN_PATHS=1``, pure mode or ``imperative.use_plain`` selects
this one. Both have the same signatures, so callers never know which one they got.
"""
from __future__ import annotations

import math
from typing import List, Optional

from .. import engine, resource
from ..context import Context
from ..engine.base import FnProperty
from ..ops import registry
from ..ops.registry import OpContext, OpDef
from . import imperative, storage_dispatch
from .chunk import Chunk
from .ndarray import NDArray

__all__ = ["invoke", "parse_params", "invoke_name", "invoke_default", "invoke_scalar"]


def invoke(op: OpDef, pkey, params: dict, inputs: List[NDArray], out=None,
           ctx: Optional[Context] = None, req=None) -> List[NDArray]:
    """Push ``op`` on ``inputs`` and return its outputs (hidden ones included); see ``imperative.invoke``."""
    # 1. The parameters: the caller parsed the keyword arguments (``parse_params`` below).
    #    ``pkey`` names them for the tuned path's caches; nothing here uses it.
    #    Sparse inputs or outputs take the storage dispatch (sparse kernel, or dense fallback).
    if storage_dispatch.wanted(op, inputs, out):
        result = storage_dispatch.invoke(op, params, inputs, out, ctx)
        if result is not None:
            return result
    # 2. Output shapes and dtypes, now: a wrong shape raises at the call, not on the worker.
    out_shapes, out_dtypes = imperative.infer_outputs(
        op, params, [x.shape for x in inputs], [x._dtype for x in inputs])
    ctx = imperative.infer_context(op, inputs, ctx)
    if op.output_ctx is not None:     # a cross-device copy: the output lives on its dst
        ctx = op.output_ctx(params)
    # 3. The outputs: new arrays with an engine variable but no memory yet, or the out= arrays.
    if out is None:
        outputs = [NDArray(Chunk(math.prod(s) * t.itemsize, ctx, engine.get().new_variable()), s, t)
                   for s, t in zip(out_shapes, out_dtypes)]
    else:
        outputs = imperative.check_out(op, out, out_shapes, out_dtypes, op.num_visible_outputs(params), ctx)
    # 4. One engine operation: it reads the inputs and writes the outputs, the auxiliary states
    #    the op updates (BatchNorm's moving mean) and its resources (a random generator).
    mutated = [inputs[i] for i in op.mutate_inputs(params)]
    resources = [resource.request(ctx, kind) for kind in op.resources]
    const_vars = [x._chunk.var for x in inputs]
    mutable_vars = [a._chunk.var for a in outputs + mutated] + [r.var for r in resources]
    kernel = registry.get_kernel(op, ctx.device_type)     # the fast kernel if any, else numpy
    is_train = imperative.is_training()
    if req is None:                     # one request per output: 'write', unless the caller says
        req = ["write"] * len(outputs)
    else:
        imperative.check_req(op, req, outputs)
        req = list(req)

    def run(run_ctx) -> None:
        # 5. On the worker, in dependency order: numpy views of the inputs and of the outputs
        #    (the first ``_data()`` of an output allocates its memory), then the kernel.
        octx = OpContext(is_train, ctx, resources, run_ctx)
        kernel(octx, params, [x._data() for x in inputs], [o._data() for o in outputs], req)

    # A kernel never blocks: the engine may run a small one on this thread (INLINE_MAX_BYTES).
    nbytes = sum(math.prod(a._shape) * a._dtype.itemsize for a in inputs + outputs)
    run.may_run_inline = imperative.small_enough_inline(nbytes)
    engine.get().push_sync(run, ctx, const_vars, mutable_vars, FnProperty.NORMAL, 0, op.name)
    # 6. Autograd's recorder, while some thread records.
    hook = imperative._record_hook
    if hook is not None:
        hook(op, params, inputs, outputs)
    return outputs


# The entry points built on ``invoke``, as plainly: each call parses its parameters afresh. They
# call ``imperative.invoke``, the selected path, so a test that wraps it sees every call.

def parse_params(op: OpDef, kwargs: dict):
    """``(key, params)`` as ``imperative.parse_params`` returns them; the key is ``None`` (no cache)."""
    return None, op.parse_params(kwargs)


def invoke_name(name: str, inputs: List[NDArray], kwargs: dict, out=None, ctx=None) -> List[NDArray]:
    """``invoke`` by operator name."""
    op = registry.get(name)
    return imperative.invoke(op, None, op.parse_params(kwargs), inputs, out, ctx)


def invoke_default(name: str, inputs: List[NDArray], out=None) -> List[NDArray]:
    """``invoke`` with the op's default parameters (``a + b``)."""
    return invoke_name(name, inputs, {}, out)


def invoke_scalar(name: str, x: NDArray, scalar, out=None) -> List[NDArray]:
    """``invoke`` of a ``_*_scalar`` operator (``a + 1``)."""
    return invoke_name(name, [x], {"scalar": scalar}, out)
