"""How an Executor turns a Symbol into engine work: the training graph, its memory plan, cached ops.

The steps follow MXNet's ``GraphExecutor::Init``:

1. :func:`build_graph` — copy the symbol's graph; when some argument wants a gradient, append the
   gradient graph (``passes.gradient.full_graph``: head gradients are variables ``_head_grad_<i>``;
   nodes are mirrored as ``MXNET_BACKWARD_DO_MIRROR`` says); infer every entry's shape and dtype;
   plan memory with the bound gradient arrays as external storage (with mxref's mirror policies,
   the smaller of nnvm's plan and ``size_first``'s).
2. :func:`allocate` — one NDArray (chunk + engine variable) per storage id, sized to its largest
   entry; every planned entry is a view of its block. Entries sharing memory therefore share one
   engine variable, and the engine orders their uses with no extra bookkeeping.
3. :func:`compile_segments` — per node, everything a run needs is computed once: the kernel, the
   parameters, numpy views of the inputs and outputs, ``req``, the variables it reads and writes,
   its resources. Consecutive nodes are grouped into *segments*, each pushed as one engine
   operation (MXNet's bulk execution, ``MXNET_EXEC_BULK_EXEC_*``), so a forward pass costs a few
   pushes instead of one per node.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from . import engine as _engine
from . import resource as _resource
from .base import MXNetError, env_bool, env_float, env_int, env_str
from .engine.base import FnProperty
from .graph import Graph, NodeEntry, apply_pass, copy_graph, make_node
from .ndarray.chunk import Chunk
from .ndarray.ndarray import NDArray, _copy_property
from .ndarray.sparse import new_sparse
from .ndarray.storage_dispatch import fallback_log, node_kernel
from .ndarray.utils import zeros as _nd_zeros
from .ops.registry import OpContext, get_kernel
from .passes.eliminate_common_expr import eliminate as eliminate_common_expr
from .passes.gradient import full_graph
from .passes.mirror import DEFAULT_BUDGET, mxnet_mirror_fun
from .passes.plan_memory import BAD_STORAGE_ID, EXTERNAL_STORAGE_ID

__all__ = ["GraphPlan", "build_graph", "allocate", "compile_segments", "NodeOp", "SegmentFn"]


class GraphPlan:
    """The planned graph and the facts the Executor needs about it.

    ``graph`` carries ``shape``, ``dtype``, ``storage_id``, ``storage_inplace_index``,
    ``storage_allocated_bytes`` and ``storage_bytes`` (per entry id / storage id), and
    ``storage_type`` / ``dispatch_mode`` (per entry / node, from ``infer_storage_type``).
    ``num_forward_nodes`` splits the node order: forward nodes first, then backward ones.
    ``head_grad_nids[i]`` is the variable node of output ``i``'s head gradient, or ``None`` when no
    backward node reads it (loss layers). ``grad_eids[name]`` is the entry holding the gradient of
    argument ``name`` (for arguments with ``grad_req != 'null'``).
    """

    def __init__(self, graph: Graph, num_forward_outputs: int, num_forward_nodes: int,
                 input_nid: Dict[str, int], head_grad_nids: List[Optional[int]],
                 grad_eids: Dict[str, int]):
        self.graph = graph
        self.idx = graph.indexed
        self.num_forward_outputs = num_forward_outputs
        self.num_forward_nodes = num_forward_nodes
        self.input_nid = input_nid
        self.head_grad_nids = head_grad_nids
        self.grad_eids = grad_eids
        # Placement (``passes/place_device``): a Context per node, or None when all run on one.
        ctxs = graph.attrs.get("device_ctx")
        self.node_ctx = None if ctxs is None else [ctxs[d] for d in graph.attrs["device"]]

    def ctx_of(self, nid: int, default):
        """The device node ``nid`` runs on (its outputs live there)."""
        return default if self.node_ctx is None else self.node_ctx[nid]

    def input_ctx(self, name: str, default):
        """The device of input variable ``name``."""
        return self.ctx_of(self.input_nid[name], default)

    def shape(self, eid: int):
        return self.graph.attrs["shape"][eid]

    def dtype(self, eid: int) -> np.dtype:
        return self.graph.attrs["dtype"][eid]

    def input_shape(self, name: str):
        return self.shape(self.idx.entry_id(self.input_nid[name], 0))

    def input_dtype(self, name: str) -> np.dtype:
        return self.dtype(self.idx.entry_id(self.input_nid[name], 0))

    def stype(self, eid: int) -> str:
        return self.graph.attrs["storage_type"][eid]

    def input_stype(self, name: str) -> str:
        return self.stype(self.idx.entry_id(self.input_nid[name], 0))


def _fmt(kind: str, value) -> str:
    if kind == "shape":
        return "unknown" if value is None else str(tuple(value))
    return "unknown" if value is None else np.dtype(value).name


def build_graph(outputs: Sequence[NodeEntry], grad_req: Dict[str, str], shapes: Dict[str, tuple],
                dtypes: Dict[str, np.dtype], caller: str = "bind",
                stypes: Optional[Dict[str, str]] = None,
                placement: Optional[dict] = None) -> GraphPlan:
    """Training (or inference) graph of ``outputs``, with shapes, dtypes, storage types and a
    memory plan.

    ``grad_req`` maps argument names to 'null'/'write'/'add'; ``shapes``/``dtypes``/``stypes``
    give what is known of the inputs. Raises ``MXNetError`` naming the inputs whose shape or dtype
    stays unknown. Sparse entries are left out of the memory plan: their size is known only when
    they are computed, so each gets an array of its own (``allocate``). ``placement`` (keyword
    arguments of the ``place_device`` pass, with ``grad_ctx``: argument name to the device of its
    gradient array) places the graph on several devices.
    """
    outputs = copy_graph(outputs)   # the executor owns its nodes: passes may annotate them
    if env_bool("MXNET_ELIMINATE_COMMON_EXPR", True):
        outputs = eliminate_common_expr(outputs)   # read per bind, as MXNet
    fwd_idx = Graph(outputs).indexed
    xs = [NodeEntry(fwd_idx.nodes[nid], 0, 0) for nid in fwd_idx.arg_nodes
          if grad_req.get(fwd_idx.nodes[nid].name, "null") != "null"]
    everywhere = False
    if xs:
        mirror_fun, everywhere = _mirror_choice(outputs, shapes)
        graph = full_graph(outputs, xs, mirror_fun=mirror_fun, mirror_everywhere=everywhere)
        head_nodes = graph.attrs["head_grad_nodes"]
        _private_add_targets(graph, len(outputs), [grad_req[x.node.name] for x in xs])
    else:
        graph, head_nodes = Graph(outputs), []
    if placement is not None:
        graph = _place(graph, len(outputs), xs, placement)
    try:
        graph = apply_pass(graph, "infer_shape", shape_inputs=shapes)
        graph = apply_pass(graph, "infer_type", dtype_inputs=dtypes)
        graph = apply_pass(graph, "infer_storage_type", storage_inputs=stypes)
    except MXNetError as exc:   # MXNet's form: the inputs as given, then the operator's complaint
        given = "".join(f"\n  {k}: {_fmt('shape', v)}" for k, v in shapes.items())
        raise MXNetError(f"{caller} error. Arguments:{given}\n{exc}") from None
    idx = graph.indexed
    input_nid = {idx.nodes[nid].name: nid for nid in idx.input_nodes}
    for kind in ("shape", "dtype"):
        values = graph.attrs[kind]
        known = (lambda s: s is not None and 0 not in s) if kind == "shape" else (lambda t: t is not None)
        bad = [idx.nodes[nid].name for nid in idx.input_nodes if not known(values[idx.entry_id(nid, 0)])]
        if bad:
            given = shapes if kind == "shape" else dtypes
            given = ", ".join(f"{k}: {_fmt(kind, v)}" for k, v in given.items())
            raise MXNetError(f"{caller}: cannot infer the {kind} of input(s) {bad} from the given "
                             f"{kind}s ({given or 'none'}); give them as arguments")
        for nid, node in enumerate(idx.nodes):
            if node.is_variable:
                continue
            for i in range(node.num_outputs()):
                if not known(values[idx.entry_id(nid, i)]):
                    raise MXNetError(f"{caller}: cannot infer the {kind} of output {i} of operator "
                                     f"{node.name} ({node.op.name})")
    num_fwd = len(outputs)
    if placement is not None:
        graph.attrs["num_forward_outputs"] = num_fwd
    grad_eids = {x.node.name: idx.entry_id(e) for x, e in zip(xs, graph.outputs[num_fwd:])}
    storage = [BAD_STORAGE_ID] * idx.num_node_entries
    for eid in grad_eids.values():           # gradient arrays are bound by the caller
        storage[eid] = EXTERNAL_STORAGE_ID
    for eid, stype in enumerate(graph.attrs["storage_type"]):
        if stype != "default":               # sparse entries: arrays of their own
            storage[eid] = EXTERNAL_STORAGE_ID
    graph.attrs["storage"] = storage
    # NOTE: recomputed values are short-lived and of many sizes, and nnvm's online allocator
    # lets a small value alive until late backward take a large block freed in forward: on
    # ResNet-50 (budget policy) its plan is 1.33x the size_first one. MXNet's own rule keeps
    # MXNet's plan, so that its figure stays comparable.
    strategy = "auto" if everywhere and not env_str("MXREF_MEM_PLAN_STRATEGY", "") else None
    graph = apply_pass(graph, "plan_memory", strategy=strategy)
    head_grad_nids = [idx.node_id.get(id(h)) for h in head_nodes]
    num_forward_nodes = len(Graph(outputs).indexed.nodes)
    return GraphPlan(graph, num_fwd, num_forward_nodes, input_nid, head_grad_nids, grad_eids)


def _place(graph: Graph, num_fwd: int, xs: Sequence[NodeEntry], placement: dict) -> Graph:
    """Run ``place_device`` on the training graph; gradient outputs end where their arrays are."""
    kwargs = dict(placement)
    grad_ctx = kwargs.pop("grad_ctx", None) or {}
    kwargs["output_ctx"] = {num_fwd + i: grad_ctx[x.node.name] for i, x in enumerate(xs)
                            if x.node.name in grad_ctx}
    graph.attrs.setdefault("num_forward_outputs", num_fwd)
    graph.attrs.setdefault("grad_of", list(xs))
    return apply_pass(graph, "place_device", **kwargs)


def _mirror_choice(outputs: Sequence[NodeEntry], shapes: Dict[str, tuple]):
    """Which forward nodes backward recomputes, as ``MXNET_BACKWARD_DO_MIRROR`` and
    ``MXREF_MIRROR_POLICY`` say; returns ``(mirror_fun, mirror_everywhere)``.

    MXNet's own rule (policy ``mxnet``) lets only the recomputed node's backward read the copy, so
    the original output stays alive for its other readers and memory *grows*; mxref's default,
    ``budget``, recomputes the cheap ops and the products that free the most memory per
    multiply-add (``MXREF_MIRROR_BUDGET`` of the forward's), and every backward node reads the
    copies. ``cheap`` recomputes MXNet's node set, read everywhere; ``sublinear`` is memonger's.
    """
    if not env_bool("MXNET_BACKWARD_DO_MIRROR", False):
        return mxnet_mirror_fun(False), False
    policy = env_str("MXREF_MIRROR_POLICY", "budget")
    if policy == "mxnet":
        return mxnet_mirror_fun(True), False
    fwd = Graph(outputs)
    if policy in ("budget", "sublinear"):
        fwd = apply_pass(fwd, "infer_shape", shape_inputs=shapes)
    fwd = apply_pass(fwd, "mirror", mirror_policy=policy,
                     budget=env_float("MXREF_MIRROR_BUDGET", DEFAULT_BUDGET))
    return fwd.attrs["grad_mirror_fun"], fwd.attrs["grad_mirror_everywhere"]


def _private_add_targets(graph: Graph, num_fwd: int, reqs: Sequence[str]) -> None:
    """Give each gradient bound with ``grad_req='add'`` an entry of its own (a ``_copy``) when
    the entry it would be written from is also read by another node or is a forward output.

    NOTE: the gradient array *is* that entry's memory, and 'add' makes it ``old + gradient``; a
    backward node reading the entry would then see the old gradient added in (``x + tanh(w)``
    with ``x`` on 'add' gives ``w`` a wrong gradient). MXNet 1.9.1 has exactly this defect.
    """
    readers = {(id(e.node), e.index) for n in graph.indexed.nodes for e in n.inputs}
    readers |= {(id(e.node), e.index) for e in graph.outputs[:num_fwd]}
    for i, req in enumerate(reqs):
        e = graph.outputs[num_fwd + i]
        if req == "add" and ((id(e.node), e.index) in readers or e.node.is_variable):
            copy = make_node("_copy", [e], f"{e.node.name}_add_target")
            graph.outputs[num_fwd + i] = NodeEntry(copy, 0, 0)
    graph._indexed = None


def allocate(plan: GraphPlan, ctx, bound: Dict[int, NDArray], shared_pool: Optional[list] = None):
    """Arrays for every entry: bound arrays (``eid -> NDArray``: inputs, gradients) and views of
    one pooled block per storage id.

    Blocks are taken largest first from ``shared_pool`` (chunks of another executor, first fit,
    as MXNet's ``shared_exec`` does), else made new and appended to it. Returns
    ``(entry_arrays, pool)``.
    """
    graph, idx = plan.graph, plan.idx
    sids, nbytes = graph.attrs["storage_id"], graph.attrs["storage_bytes"]
    pool = shared_pool if shared_pool is not None else []
    free = sorted(pool, key=lambda c: c.nbytes)
    eng = _engine.get()
    sid_ctx = storage_contexts(plan, ctx)
    blocks: Dict[int, Chunk] = {}
    for sid in sorted(range(len(nbytes)), key=lambda s: -nbytes[s]):
        if nbytes[sid] == 0:
            continue
        where = sid_ctx.get(sid, ctx)
        chunk = next((c for c in free if c.nbytes >= nbytes[sid] and c.ctx == where), None)
        if chunk is not None:
            free.remove(chunk)
        else:
            chunk = Chunk(nbytes[sid], where, eng.new_variable())
            pool.append(chunk)
        chunk.data()    # allocate now, as MXNet does at bind: views below are taken once
        blocks[sid] = chunk
    arrays: List[Optional[NDArray]] = [None] * idx.num_node_entries
    for eid, arr in bound.items():
        arrays[eid] = arr
    for nid, node in enumerate(idx.nodes):
        if node.is_variable:
            continue
        for i in range(node.num_outputs()):
            eid = idx.entry_id(nid, i)
            if arrays[eid] is not None:
                continue
            shape, dtype = tuple(plan.shape(eid)), np.dtype(plan.dtype(eid))
            if plan.stype(eid) != "default":
                arrays[eid] = new_sparse(plan.stype(eid), shape, plan.ctx_of(nid, ctx), dtype)
                continue
            chunk = blocks.get(sids[eid])
            if chunk is None:   # not planned (zero-size entries): a private array
                chunk = Chunk(max(int(np.prod(shape)) * dtype.itemsize, 0), plan.ctx_of(nid, ctx),
                              eng.new_variable())
            arrays[eid] = NDArray(chunk, shape, dtype, 0)
    return arrays, pool


def storage_contexts(plan: GraphPlan, default) -> Dict[int, object]:
    """The device of each planned block: that of the nodes writing it (one device per block:
    ``plan_memory`` keeps devices apart). Empty when the graph runs on one device."""
    if plan.node_ctx is None:
        return {}
    idx, sids = plan.idx, plan.graph.attrs["storage_id"]
    out: Dict[int, object] = {}
    for nid, node in enumerate(idx.nodes):
        for i in range(node.num_outputs()):
            sid = sids[idx.entry_id(nid, i)]
            if sid >= 0:
                where = plan.node_ctx[nid]
                if out.setdefault(sid, where) != where:
                    raise MXNetError(f"plan_memory: block {sid} is shared by {out[sid]} and {where}")
    return out


class NodeOp:
    """One node made ready to run: what its kernel call needs, computed once at bind."""

    __slots__ = ("nid", "name", "op_name", "call", "const_vars", "mutable_vars", "in_eids", "out_eids",
                 "ctx", "prop")

    def __init__(self, nid, name, op_name, call, const_vars, mutable_vars, in_eids=(), out_eids=(),
                 ctx=None, prop=FnProperty.NORMAL):
        self.nid = nid
        self.name = name
        self.op_name = op_name
        # (kernel, (octx_eval, octx_train), params, input views, output views, req)
        self.call = call
        self.const_vars = const_vars
        self.mutable_vars = mutable_vars
        # The graph entries behind ``call``'s inputs and outputs (a CachedOp swaps some per call).
        self.in_eids = in_eids
        self.out_eids = out_eids
        # Where it runs when the graph is placed on several devices (None: the executor's
        # context), and its routing: copies go to the copy workers.
        self.ctx = ctx
        self.prop = prop


def _reqs(plan: GraphPlan, nid: int, add_eids: set) -> List[str]:
    """MXNet's request per output: add to a gradient bound with 'add', in place, never read, write."""
    inplace = plan.graph.attrs["storage_inplace_index"]
    reqs = []
    for i in range(plan.idx.nodes[nid].num_outputs()):
        eid = plan.idx.entry_id(nid, i)
        if eid in add_eids:
            reqs.append("add")
        elif inplace[eid] >= 0:
            reqs.append("inplace")
        elif inplace[eid] == -2:
            reqs.append("null")
        else:
            reqs.append("write")
    return reqs


def compile_nodes(plan: GraphPlan, arrays: List[NDArray], ctx, add_eids: set) -> List[NodeOp]:
    """A ``NodeOp`` for every operator node, in execution order."""
    idx = plan.idx
    ops = []
    stypes = plan.graph.attrs["storage_type"]
    # Sparse entries are outside the memory plan, which marks the unread ones: do it here.
    read = {idx.entry_id(e) for n in idx.nodes for e in n.inputs} | set(idx.output_entry_ids())
    default_ctx = ctx
    for nid, node in enumerate(idx.nodes):
        if node.is_variable:
            continue
        ctx = plan.ctx_of(nid, default_ctx)
        op, params = node.op, node.params
        in_eids = tuple(idx.entry_id(e) for e in node.inputs)
        out_eids = tuple(idx.entry_id(nid, i) for i in range(node.num_outputs()))
        in_arrs = [arrays[eid] for eid in in_eids]
        out_arrs = [arrays[eid] for eid in out_eids]
        if "mirror_of" in node.extra:
            # NOTE: a forward node recomputed for backward must not update auxiliary states a
            # second time (BatchNorm's moving statistics): give it private scratch copies.
            for k in op.mutate_inputs(params):
                if k < len(in_arrs):
                    in_arrs[k] = _nd_zeros(in_arrs[k].shape, ctx=ctx, dtype=in_arrs[k].dtype)
        resources = [_resource.request(ctx, kind) for kind in op.resources]
        mutable = [a._chunk.var for a in out_arrs]
        mutable += [in_arrs[k]._chunk.var for k in op.mutate_inputs(params) if k < len(in_arrs)]
        mutable += [r.var for r in resources]
        mset = set(map(id, mutable))
        reqs = _reqs(plan, nid, add_eids)
        reqs = ["null" if stypes[e] != "default" and e not in read and r == "write" else r
                for e, r in zip(out_eids, reqs)]
        const = [v for v in dict.fromkeys(a._chunk.var for a in in_arrs) if id(v) not in mset]
        # An 'add' output reads its old value: listed as read too, so a gradient that carries an
        # engine error keeps it instead of being overwritten (the engine dedups the pair).
        const += [a._chunk.var for a, r in zip(out_arrs, reqs) if r == "add"]
        octxs = (OpContext(False, ctx, resources), OpContext(True, ctx, resources))
        mode = plan.graph.attrs["dispatch_mode"][nid]
        if mode == "fcompute" and not any(a._sparse for a in in_arrs + out_arrs):
            call = (get_kernel(op, ctx.device_type), octxs, params, [a._data() for a in in_arrs],
                    [a._data() for a in out_arrs], reqs)
        else:   # sparse entries: the kernel takes the arrays and reads their components at run time
            if mode == "fallback":
                fallback_log(op.name, [a.stype for a in in_arrs], [a.stype for a in out_arrs])
            kernel = node_kernel(op, "fallback" if mode != "fcompute_ex" else mode,
                                 [stypes[e] for e in in_eids], [stypes[e] for e in out_eids],
                                 get_kernel(op, ctx.device_type))
            call = (kernel, octxs, params, in_arrs, out_arrs, reqs)
        placed, prop = plan.node_ctx is not None, FnProperty.NORMAL
        if placed and op.name == "_CrossDeviceCopy":
            prop = _copy_property(in_arrs[0].context, ctx)
        ops.append(NodeOp(nid, node.name, op.name, call, const, list(dict.fromkeys(mutable)),
                          in_eids, out_eids, ctx if placed else None, prop))
    return ops


class SegmentFn:
    """The engine function of one segment: runs its nodes' kernels in order.

    Two instances exist per segment (training and inference), so the flag a run sees is fixed at
    push time even if the next ``forward`` changes it. On failure ``failed_name`` names the node,
    which the engine puts in the error it raises at the next wait.
    """

    __slots__ = ("calls", "names", "is_train", "failed_name", "__name__")

    def __init__(self, ops: Sequence[NodeOp], is_train: bool, name: str):
        self.calls = [op.call for op in ops]
        self.names = [f"{op.op_name} (node {op.name})" for op in ops]
        self.is_train = int(is_train)
        self.failed_name = None
        self.__name__ = name

    def __call__(self, run_ctx) -> None:
        self.run(self.calls, run_ctx)

    def run(self, calls, run_ctx, owner=None) -> None:
        """Run ``calls``: this segment's, or a copy with some arrays swapped by a ``CachedOp``,
        whose pushed function (``owner``) is then the one to name a failed node."""
        t = self.is_train
        call = None
        try:
            for call in calls:
                kernel, octxs, params, ins, outs, req = call
                octx = octxs[t]
                octx.run_ctx = run_ctx
                kernel(octx, params, ins, outs, req)
        except BaseException as exc:
            failed = self.names[calls.index(call)] if call is not None else None
            (owner or self).failed_name = failed
            exc.add_note(f"while running {failed} in {self.__name__}")
            raise


class Segment:
    """Consecutive nodes pushed as one engine op: reads what they read from outside, writes the rest."""

    __slots__ = ("ops", "const_vars", "mutable_vars", "name", "fns", "ctx", "prop")

    def __init__(self, ops: Sequence[NodeOp], name: str):
        self.ops = list(ops)
        self.ctx, self.prop = ops[0].ctx, ops[0].prop     # one device and routing per segment
        mutable = list(dict.fromkeys(v for op in ops for v in op.mutable_vars))
        # What the segment reads from outside: each node's reads not written by an earlier node
        # (some, an 'add' gradient, are written by the node itself: the engine dedups those).
        written, reads = set(), {}
        for op in ops:
            for v in op.const_vars:
                if id(v) not in written:
                    reads.setdefault(id(v), v)
            written.update(map(id, op.mutable_vars))
        self.const_vars = list(reads.values())
        self.mutable_vars = mutable
        self.name = name if len(ops) > 1 else ops[0].op_name
        self.fns = (SegmentFn(ops, False, self.name), SegmentFn(ops, True, self.name))

    def push(self, ctx, is_train: bool) -> None:
        _engine.get().push_sync(self.fns[int(is_train)], self.ctx or ctx, self.const_vars,
                                self.mutable_vars, self.prop, name=self.name)


def bulk_sizes(training: bool) -> tuple:
    """Nodes per segment ``(forward, backward)`` from MXNet's ``MXNET_EXEC_BULK_EXEC_*`` flags.

    Inference bulks the whole forward pass into one segment; training into segments of at most
    ``MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD`` / ``_BWD`` nodes (default 15). A size of 1 means
    one engine op per node.
    """
    if not training:
        return (1 << 30 if env_bool("MXNET_EXEC_BULK_EXEC_INFERENCE", True) else 1), 1
    if not env_bool("MXNET_EXEC_BULK_EXEC_TRAIN", True):
        return 1, 1
    default = env_int("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN", 15)
    return (max(1, env_int("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD", default)),
            max(1, env_int("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD", default)))


def compile_segments(ops: Sequence[NodeOp], size: int, name: str) -> List[Segment]:
    """Split ``ops`` (already in execution order) into segments of at most ``size`` nodes; a
    placed graph's segments also end where the device changes, and each copy is one alone."""
    size = max(1, size)
    out, run = [], []
    for op in ops:
        if run and (len(run) >= size or op.ctx != run[0].ctx or op.prop != FnProperty.NORMAL
                    or run[0].prop != FnProperty.NORMAL):
            out.append(Segment(run, name))
            run = []
        run.append(op)
    if run:
        out.append(Segment(run, name))
    return out
