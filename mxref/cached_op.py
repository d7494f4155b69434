"""CachedOp: a bound executor run on the caller's arrays, call after call (MXNet's ``CachedOp``).

A hybridized Gluon block runs one graph on a new batch every step. Binding an Executor to each
batch would plan and compile the graph every time; copying the batch into a bound array, the
outputs out of it and the head gradients into it costs three engine operations and three passes
over memory per step. A ``CachedOp`` keeps one executor (its plan, its segments, its pooled
memory) and makes three kinds of graph entries per-call *slots*:

* the data inputs: the forward and backward nodes read the caller's arrays;
* the forward outputs: the nodes that make them write new arrays, returned to the caller (no
  copy, and nothing the next call overwrites);
* the head gradients: the backward reads the gradients it is given.

A segment none of whose nodes touches a slot is pushed as the executor prepared it. For the
others, the pushed function carries this call's arrays and, when it runs, builds the few kernel
calls that touch a slot afresh (every other call is the executor's own); the arrays' engine
variables join the segment's reads and writes, so the engine orders the call after whatever
produces the inputs and before whatever reads the outputs.

The backward must be given the inputs and outputs of the forward it differentiates: a recorded
call keeps them (``HybridBlock``'s ``_CachedCall``), as MXNet's CachedOp keeps its inputs.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from . import engine as _engine
from .base import MXNetError
from .executor_plan import Segment, SegmentFn
from .ndarray.ndarray import NDArray, _empty

__all__ = ["CachedOp"]


class _SlotSegmentFn:
    """The engine function of one push of a segment that touches slots: the segment's kernel calls
    with this call's arrays swapped in for the slot entries."""

    __slots__ = ("base", "patches", "arrays", "failed_name", "__name__")

    def __init__(self, base: SegmentFn, patches: tuple, arrays: Sequence[Optional[NDArray]]):
        self.base = base
        self.patches = patches
        self.arrays = arrays
        self.failed_name = None
        self.__name__ = base.__name__

    def __call__(self, run_ctx) -> None:
        arrays = self.arrays
        # Drop the arrays once run (as ``imperative._KernelCall`` does): the engine may keep the
        # finished operation object a while, and this call's inputs and outputs must not live
        # on with it.
        self.arrays = None
        calls = self.base.calls.copy()
        for i, ins, outs, req in self.patches:
            kernel, octxs, params, cin, cout, creq = calls[i]
            if ins:
                cin = cin.copy()
                for k, s in ins:
                    cin[k] = arrays[s]._data()
            if outs:
                cout = cout.copy()
                for k, s in outs:
                    cout[k] = arrays[s]._data()     # (allocates a new output's memory)
            calls[i] = (kernel, octxs, params, cin, cout, req if req is not None else creq)
        self.base.run(calls, run_ctx, self)


class _SlotSegment:
    """A segment some of whose nodes read or write slots; ``push`` takes the call's slot arrays."""

    __slots__ = ("segment", "patches", "reads", "writes")

    def __init__(self, segment: Segment, slot_of: dict):
        self.segment = segment
        patches, reads, writes = [], {}, {}
        for i, op in enumerate(segment.ops):
            ins = tuple((k, slot_of[e]) for k, e in enumerate(op.in_eids) if e in slot_of)
            outs = tuple((k, slot_of[e]) for k, e in enumerate(op.out_eids) if e in slot_of)
            if not (ins or outs):
                continue
            # NOTE: 'inplace' tells a kernel its output shares its input's memory, which a swapped
            # array no longer does; 'write' is right either way.
            req = op.call[5]
            req = ["write" if r == "inplace" else r for r in req] if "inplace" in req else None
            patches.append((i, ins, outs, req))
            reads.update((s, None) for _, s in ins)
            writes.update((s, None) for _, s in outs)
        self.patches = tuple(patches)
        self.reads = tuple(s for s in reads if s not in writes)
        self.writes = tuple(writes)

    def push(self, ctx, is_train: bool, arrays: Sequence[Optional[NDArray]]) -> None:
        seg = self.segment
        fn = _SlotSegmentFn(seg.fns[int(is_train)], self.patches, arrays)
        # (the engine drops duplicates: one array passed as two inputs)
        const = seg.const_vars + [arrays[s]._chunk.var for s in self.reads]
        mutable = seg.mutable_vars + [arrays[s]._chunk.var for s in self.writes]
        _engine.get().push_sync(fn, ctx, const, mutable, name=seg.name)


class _PlainSegment:
    """A segment that touches no slot: pushed as the executor made it."""

    __slots__ = ("segment",)

    def __init__(self, segment: Segment):
        self.segment = segment

    def push(self, ctx, is_train: bool, arrays) -> None:
        self.segment.push(ctx, is_train)


class CachedOp:
    """Runs ``executor`` with ``data_names`` (its data arguments), its forward outputs and its head
    gradients taken from the caller on every call.

    ``forward(inputs, is_train)`` returns new output arrays; ``backward(inputs, outputs,
    out_grads, is_train)`` differentiates the forward that took ``inputs`` and returned ``outputs``,
    writing the executor's gradient arrays. Nothing waits: the engine orders everything by the
    arrays' variables.

    An output that is a graph input passed through, or that appears twice among the outputs, has
    no node of its own to write it: it is returned as a copy (of the caller's input, the bound
    parameter, or the executor's array).
    """

    def __init__(self, executor, data_names: Sequence[str]):
        if executor._monitor is not None:
            raise MXNetError("CachedOp: the executor has a monitor callback; run it with forward()")
        self.executor = executor
        plan = executor._plan
        idx = plan.idx
        slot_of = {}
        for s, name in enumerate(data_names):
            if name in plan.input_nid:      # a data input the graph never reads has no entry
                slot_of[idx.entry_id(plan.input_nid[name], 0)] = s
        self.num_data = len(data_names)
        out_eids = [idx.entry_id(e) for e in plan.graph.outputs[:plan.num_forward_outputs]]
        # outputs written into new arrays: (index, shape, dtype); the others are copied, from the
        # caller's input (a data input passed through) or from the executor's array
        self._new_outputs, self._copied = [], []
        for j, (e, eid) in enumerate(zip(plan.graph.outputs, out_eids)):
            if e.node.is_variable or out_eids.count(eid) > 1:
                self._copied.append((j, slot_of.get(eid)))
                continue
            slot_of[eid] = self.num_data + j
            self._new_outputs.append((j, tuple(plan.shape(eid)), np.dtype(plan.dtype(eid))))
        self.num_outputs = len(out_eids)
        heads_at = self.num_data + self.num_outputs
        self._heads = []        # (slot, output index, shape) of the head gradients backward reads
        for j, nid in enumerate(plan.head_grad_nids):
            if nid is not None:
                eid = idx.entry_id(nid, 0)
                slot_of[eid] = heads_at + j
                self._heads.append((heads_at + j, j, tuple(plan.shape(eid))))
        self.num_slots = heads_at + self.num_outputs

        def wrap(segments):
            out = []
            for seg in segments:
                slotted = _SlotSegment(seg, slot_of)
                out.append(slotted if slotted.patches else _PlainSegment(seg))
            return out
        self._fwd = wrap(executor._fwd_segments)
        self._bwd = wrap(executor._bwd_segments)

    def forward(self, inputs: Sequence[NDArray], is_train: bool) -> List[NDArray]:
        """Push the forward pass on ``inputs`` (NDArrays of the bound shapes, dtypes and context);
        returns the outputs, new arrays that the pushed work writes."""
        ex = self.executor
        ctx = ex._ctx
        arrays: List[Optional[NDArray]] = [*inputs] + [None] * (self.num_slots - self.num_data)
        outputs: List[Optional[NDArray]] = [None] * self.num_outputs
        for j, shape, dtype in self._new_outputs:
            outputs[j] = arrays[self.num_data + j] = _empty(shape, ctx, dtype)
        for seg in self._fwd:
            seg.push(ctx, is_train, arrays)
        for j, source in self._copied:
            outputs[j] = (ex.outputs[j] if source is None else arrays[source]).copy()
        return outputs

    def backward(self, inputs: Sequence[NDArray], outputs: Sequence[NDArray],
                 out_grads: Sequence[Optional[NDArray]], is_train: bool = True) -> None:
        """Push the backward pass of the forward that took ``inputs`` and returned ``outputs``,
        with ``out_grads`` (one per output; ``None`` where no backward node reads it)."""
        if not self._bwd:
            return
        arrays: List[Optional[NDArray]] = [*inputs, *outputs] + [None] * self.num_outputs
        for slot, j, shape in self._heads:
            g = out_grads[j] if j < len(out_grads) else None
            if g is None:
                raise MXNetError(f"CachedOp.backward: output {j} needs a head gradient")
            if g._shape != shape:
                raise MXNetError(f"CachedOp.backward: head gradient {j} has shape {g._shape}, "
                                 f"output {j} has shape {shape}")
            arrays[slot] = g
        ctx = self.executor._ctx
        for seg in self._bwd:
            seg.push(ctx, is_train, arrays)
