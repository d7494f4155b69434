"""Autograd: record imperative NDArray operations as a graph, then differentiate it with the op gradients.

The whole idea, as MXNet's ``Imperative::RecordOp`` / ``Imperative::Backward`` do it:

1. **Record.** While ``record()`` is on, every operator ``mx.nd`` runs (``imperative.invoke`` calls
   our hook) appends one graph ``Node``: its inputs are the entries of its input arrays, and each
   output array remembers its own ``NodeEntry`` in ``arr._ag``. Arrays marked with ``attach_grad``
   are variable nodes that carry a gradient buffer and a ``grad_req``. The node keeps only the
   forward values its backward will read (found once per operator by asking its ``gradient``).
2. **Differentiate.** ``backward(heads)`` walks the recorded nodes from the heads back: each
   operator's ``gradient`` builds its backward as more nodes (``_backward_*``, sums, ...), which
   are pushed through ``imperative.invoke`` like any ``mx.nd`` call, reading the saved forward
   values.
3. **Store.** Each variable's gradient lands in ``x.grad`` ('write' or 'add'). Unless
   ``retain_graph``, the recorded values are dropped, and a second ``backward`` raises. With
   ``create_graph`` the backward ops are themselves recorded, so the gradient can be
   differentiated again.

``autograd_plain.py`` does steps 2 and 3 node by node, micrograd-style: read it first. The
``backward`` and ``grad`` here are the tuned form of the same steps, with the same results bit
for bit, and run unless the plain paths are selected (``MXREF_PLAIN_PATHS=1``, pure mode or
``imperative.use_plain``; then they hand over to ``autograd_plain``). Step 2 is done in
``_differentiate``, and differs in two ways, because a training loop records the same graph step
after step and rebuilding its backward costs more Python than running it:

- the backward nodes of the whole graph are built in one go by the executor's ``gradient`` pass,
  once per graph *structure*, and kept as a plan of numbered value slots (``autograd_plan``); a
  graph recorded again the same way fills the slots from its own nodes and replays the plan;
- the plan frees each value after its last reader, so activations go during backward, not after.

Recording has its tricks too: the invoke hook is installed only while some thread records, the
forward values each operator's backward reads are remembered per (op, parameters)
(``_backward_deps``, found by identity of the parsed parameter dict first), and the default head
gradient on the CPU is filled without an engine operation (``_ones_like``).

Recording and training are per-thread flags: ``record()`` turns on both (operators such as
Dropout and BatchNorm follow the *training* flag), ``pause()`` turns both off.
"""
from __future__ import annotations

import threading
from typing import ContextManager, Dict, List, Optional, Sequence, Tuple, Union

from .base import MXNetError
from .graph import Node, NodeEntry, topo_sort
from .ndarray import imperative as _imperative
from .ndarray.ndarray import NDArray, _empty, _memoryless
from .ops import registry

# ``NDArray`` too: ``from mxnet.autograd import *`` hands it to MXNet's scripts and tests.
__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "get_symbol",
           "Function", "NDArray"]

_GRAD_REQS = ("null", "write", "add")
_NOT_IN_GRAPH = ("Cannot differentiate node because it is not in a computational graph. You need to "
                 "set is_recording to true or use autograd.record() to save computational graphs for "
                 "backward. If you want to differentiate the same graph twice, you need to pass "
                 "retain_graph=True to backward.")

# ---------------------------------------------------------------------------------------------
# The recording and training flags (training lives in imperative: kernels read it from there)
# ---------------------------------------------------------------------------------------------


class _RecordingState(threading.local):
    is_recording = False
    storing_grads = False   # inside backward(), which overwrites every variable's .grad anyway


_state = _RecordingState()
_lock = threading.Lock()
_num_recording = 0     # threads recording now: the invoke hook is installed only while any do


def is_recording() -> bool:
    """Whether operators run on this thread are being recorded for differentiation."""
    return _state.is_recording


def is_training() -> bool:
    """Whether operators run on this thread in training mode (Dropout drops, BatchNorm uses batch stats)."""
    return _imperative.is_training()


def set_recording(is_recording: bool) -> bool:
    """Turn recording on or off on this thread; return the previous state."""
    global _num_recording
    old, new = _state.is_recording, bool(is_recording)
    if old != new:
        _state.is_recording = new
        with _lock:
            _num_recording += 1 if new else -1
            _imperative.set_record_hook(_record_hook if _num_recording > 0 else None)
    return old


def set_training(train_mode: bool) -> bool:
    """Turn training mode on or off on this thread; return the previous state."""
    return _imperative.set_is_training(train_mode)


class _Scope:
    """Set the recording and/or training flags (``None``: leave it) and restore them on exit.

    (A class rather than a ``contextlib`` generator: a training step enters several.)
    """

    __slots__ = ("_record", "_train", "_prev_record", "_prev_train")

    def __init__(self, is_record: Optional[bool], train: Optional[bool]):
        self._record, self._train = is_record, train

    def __enter__(self) -> None:
        if self._record is not None:
            self._prev_record = set_recording(self._record)
        if self._train is not None:
            self._prev_train = set_training(self._train)

    def __exit__(self, *exc) -> bool:
        if self._record is not None:
            set_recording(self._prev_record)
        if self._train is not None:
            set_training(self._prev_train)
        return False


def record(train_mode: bool = True) -> ContextManager[None]:
    """Record the operators run inside ``with autograd.record():`` (and train, unless told not to)::

        x.attach_grad()
        with autograd.record():
            y = (x * x).sum()
        y.backward()          # x.grad == 2 * x
    """
    return _Scope(True, train_mode)


def pause(train_mode: bool = False) -> ContextManager[None]:
    """Stop recording inside the scope (and predict, unless ``train_mode``)."""
    return _Scope(False, train_mode)


def train_mode() -> ContextManager[None]:
    """Training mode inside the scope, recording unchanged."""
    return _Scope(None, True)


def predict_mode() -> ContextManager[None]:
    """Inference mode inside the scope, recording unchanged."""
    return _Scope(None, False)


# ---------------------------------------------------------------------------------------------
# What a recorded node keeps: the forward values its backward reads (MXNet's AGInfo)
# ---------------------------------------------------------------------------------------------

class _Saved:
    """``node.extra['ag']`` of a recorded node or variable.

    ``ins[i]`` / ``outs[i]`` hold an alias of the input / output array when backward reads it, else
    ``None`` / its ``(shape, dtype, ctx)``, enough to stand in for a value read only for its shape.
    Variables also carry their gradient buffer and ``grad_req``.
    """

    __slots__ = ("ins", "outs", "grad", "grad_req", "fresh")

    def __init__(self, ins, outs, grad=None, grad_req=None):
        self.ins, self.outs, self.grad, self.grad_req = ins, outs, grad, grad_req
        self.fresh = False      # a backward wrote the gradient since the flag was last cleared


def _alias(x: NDArray) -> NDArray:
    """Another handle on ``x``'s memory without its graph entry (an array saved by a node must not
    point back at the node, or the two would keep each other alive): ``x.detach()``."""
    if x._sparse:
        return x.detach()      # a sparse array's handle shares its components too
    return NDArray(x._chunk, x._shape, x._dtype, x._offset)


def _spec(x: NDArray) -> tuple:
    """``(shape, dtype, ctx)`` of a value not kept; a sparse one adds its stype."""
    if x._sparse:
        return (x._shape, x._dtype, x._chunk.ctx, x.stype)
    return (x._shape, x._dtype, x._chunk.ctx)


def _variable(x: NDArray, grad: Optional[NDArray] = None, grad_req: Optional[str] = None) -> NodeEntry:
    node = Node(None, "var" if grad_req else "null")
    node.extra["ag"] = _Saved((), [_spec(x)], grad, grad_req)
    return NodeEntry(node, 0, 0)


def _live_entry(x: NDArray) -> Optional[NodeEntry]:
    """``x``'s entry if it is in a graph that still holds its values (not freed by a backward)."""
    e = x._ag
    if e is None or e.node.extra.get("ag") is None:
        return None
    return e


_deps_cache: Dict[tuple, Tuple[frozenset, frozenset]] = {}
_deps_by_id: Dict[int, tuple] = {}


def _backward_deps(op: registry.OpDef, params: dict, n_in: int, n_out: int):
    """``(inputs, outputs)``: indices of the forward values the op's backward reads.

    Found by building the op's gradient on placeholder nodes and looking at what the backward
    nodes take as inputs (values they read only for the shape, ``ignore_inputs``, do not count).
    """
    # A training loop records the same ops with the same (cached, parsed) parameter dicts every
    # step: look the dict up by identity first, by value only when that misses.
    seen = _deps_by_id.get(id(params))
    if seen is not None and seen[0] is params and seen[1] == (op.name, n_in, n_out):
        return seen[2]
    try:
        key = (op.name, n_in, n_out, tuple(params.items()))
        hit = _deps_cache.get(key)
    except TypeError:     # unhashable parameter values: analyse without caching
        key, hit = None, None
    if hit is not None:
        _remember_params(params, (op.name, n_in, n_out), hit)
        return hit
    fwd = Node(op, op.name, None, [NodeEntry(Node(None, f"in{i}"), 0, 0) for i in range(n_in)])
    fwd._params = params
    input_of = {id(e.node): i for i, e in enumerate(fwd.inputs)}
    need_in, need_out = set(), set()

    def forward_value(e: NodeEntry, read: bool = True) -> bool:
        """Whether ``e`` is one of the forward node's inputs or outputs (noted if ``read``)."""
        if e.node is not fwd and id(e.node) not in input_of:
            return False
        if read and e.node is fwd:
            need_out.add(e.index)
        elif read:
            need_in.add(input_of[id(e.node)])
        return True

    grads = [g for g in op.gradient(fwd, [NodeEntry(Node(None, "ograd"), 0, 0)] * n_out) if g is not None]
    stack, seen = [g.node for g in grads if not forward_value(g)], set()
    while stack:
        node = stack.pop()
        if node.is_variable or id(node) in seen:
            continue
        seen.add(id(node))
        for i, e in enumerate(node.inputs):
            if not forward_value(e, read=i not in node.op.ignore_inputs):
                stack.append(e.node)
    hit = (frozenset(need_in), frozenset(need_out))
    if key is not None:
        _deps_cache[key] = hit
        _remember_params(params, (op.name, n_in, n_out), hit)
    return hit


def _remember_params(params: dict, what: tuple, hit) -> None:
    if len(_deps_by_id) >= 1024:      # (ops whose parameters are parsed afresh on every call)
        _deps_by_id.clear()
    _deps_by_id[id(params)] = (params, what, hit)     # holding params keeps its id from reuse


# ---------------------------------------------------------------------------------------------
# Recording (Imperative::RecordOp)
# ---------------------------------------------------------------------------------------------

def _record_hook(op, params, inputs, outputs) -> None:
    """Called by ``imperative.invoke`` after every operator while some thread records."""
    if _state.is_recording:
        _record(op, params, inputs, outputs)


def _record(op: registry.OpDef, params: dict, inputs: Sequence[NDArray], outputs: Sequence[NDArray],
            extra: Optional[dict] = None) -> None:
    for o in outputs:
        if _live_entry(o) is not None:
            raise MXNetError(
                "Assigning to NDArrays that are already in a computational graph will cause undefined "
                "behavior when evaluating gradients. Please call backward first to clear the graph or do "
                "this outside of a record section. In-place operations (+=, *=, relu(x, out=x), "
                f"y[idx]=x, ...) cannot be used inside a record section. Operator: {op.name}")
    entries = [_live_entry(x) for x in inputs]
    if all(e is None for e in entries):
        return   # nothing here depends on a variable: no gradient can flow through this op
    entries = [e if e is not None else _variable(x) for e, x in zip(entries, inputs)]
    node = Node(op, op.name, None, entries)
    node._params = params
    if op.gradient is not None:
        need_in, need_out = _backward_deps(op, params, len(inputs), len(outputs))
    else:
        need_in = need_out = ()
    ins = [_alias(x) if i in need_in else None for i, x in enumerate(inputs)]
    outs = [_alias(o) if i in need_out else _spec(o) for i, o in enumerate(outputs)]
    node.extra["ag"] = _Saved(ins, outs)
    if extra:
        node.extra.update(extra)
    for i, o in enumerate(outputs):
        o._ag = NodeEntry(node, i, 0)


def mark_variables(variables: Union[NDArray, Sequence[NDArray]],
                   gradients: Union[NDArray, Sequence[NDArray]],
                   grad_reqs: Union[str, Sequence[str]] = "write") -> None:
    """Make ``variables`` leaves of future recorded graphs, with ``gradients`` as their gradient buffers.

    ``grad_reqs`` ('write', 'add' or 'null', one or one per variable) says how backward stores
    the gradient: overwrite, accumulate, or skip.
    """
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if not len(variables) == len(gradients) == len(grad_reqs):
        raise MXNetError(f"mark_variables: got {len(variables)} variables, {len(gradients)} gradients "
                         f"and {len(grad_reqs)} grad_reqs; they must match")
    for x, g, req in zip(variables, gradients, grad_reqs):
        if req not in _GRAD_REQS:
            raise MXNetError(f"mark_variables: grad_req must be one of {list(_GRAD_REQS)}, got {req!r}")
        x._ag = _variable(x, g, req)
        x._grad = g


# ---------------------------------------------------------------------------------------------
# Backward (Imperative::Backward), tuned: a plan from the gradient pass, its ops run through invoke
# ---------------------------------------------------------------------------------------------

def _differentiate(heads, head_grads, variables, retain_graph: bool, create_graph: bool,
                   is_train: bool) -> Tuple[List[Node], List[NDArray], List[bool]]:
    """Differentiate the recorded graph and run its backward ops (shared by ``backward`` and ``grad``).

    ``autograd_plain._walk``'s step 2, tuned. The backward pass comes from a plan (``autograd_plan``):
    built by the gradient pass the first time a graph of this structure is differentiated, reused
    after. The plan's slots are filled with the head gradients, the kept forward values (linked to
    their entries with ``create_graph``) and shape-only stand-ins; the graph's nodes are emptied
    (unless ``retain_graph``), so each value lives only in its slot until its last reader has run.
    Returns the variable nodes differentiated, their gradient values, and whether each value was
    computed by the backward pass (not a head gradient or a forward value passed through, which
    ``grad`` copies).
    """
    ys, head_values = _heads(heads, head_grads)
    topo, index = _plan.tape_order(ys)
    key = _plan.structure_key(topo, index)
    if key is not None:
        heads_at = tuple((index[id(y.node)], y.index) for y in ys)
        targets = () if variables is None else tuple(_position(v, index) for v in variables)
        key = None if None in targets else (key, heads_at, variables is None, targets)
    plan = _plan.cached_plan(key) if key is not None else None
    if plan is None:
        plan = _plan.build_plan(topo, index, ys, _targets(topo, variables), _NOT_IN_GRAPH)
        if key is not None:
            _plan.remember(key, plan)
    elif variables is not None:
        _targets(topo, variables)      # the same checks (and errors) as when the plan was built
    values: List[Optional[NDArray]] = list(head_values) + [None] * (plan.num_slots - len(head_values))
    for slot, pos, is_output, k in plan.sources:
        n = topo[pos]
        saved = n.extra["ag"]
        v = saved.outs[k] if is_output else saved.ins[k]
        values[slot] = _with_entry(v, NodeEntry(n, k, 0) if is_output else n.inputs[k]) if create_graph else v
    for slot, pos, k in plan.ghosts:
        # a value the backward op reads only for its shape (``ignore_inputs``): no memory
        spec = topo[pos].extra["ag"].outs[k]
        values[slot] = _memoryless(spec[0], spec[2], spec[1], *spec[3:])
    functions = {s.function: (topo[s.function].extra["function"], topo[s.function].extra["input_shapes"])
                 for s in plan.steps if s.function is not None}
    xs = [topo[i] for i in plan.xs]
    if not retain_graph:
        for n in topo:
            if not n.is_variable:
                n.extra.clear()    # the saved values now live only in `values`, dropped once read
    direct = _direct_outputs(plan, xs, values) if _state.storing_grads and not create_graph else None
    with _Scope(create_graph, is_train):
        for i, step in enumerate(plan.steps):
            ins = [values[s] for s in step.ins]
            if step.function is not None:
                outs = _function.run_backward(*functions[step.function], ins)
            elif direct is not None and i in plan.direct_steps:
                outs = _invoke_into(step, ins, direct)
            else:
                outs = _imperative.invoke(step.op, step.params_key, step.params, ins)
            for s, o in zip(step.outs, outs):
                if s is not None:
                    values[s] = o
            for s in step.frees:
                values[s] = None
    return xs, [values[s] for s in plan.grads], list(plan.produced)


# ---------------------------------------------------------------------------------------------
# Backward ops writing where their results go (MXNet's OpReqType for the gradient outputs)
# ---------------------------------------------------------------------------------------------
#
# ``backward`` stores each variable's gradient into its ``.grad``. A gradient that one backward op
# computes for one variable only (``Plan.sole_grads``) is written by that op straight into the
# ``.grad`` buffer (grad_req 'write'), as MXNet's kWriteTo into the gradient array, rather than into
# a new array that ``store`` then copies over. And an output nobody reads (the data gradient of a
# network's first layer, whose input needs none) is given req 'null', so that the kernels of
# ``_NULL_REQ_OPS`` skip computing it (MXNet's kNullOp).

# Backward ops whose kernels skip an output of req 'null' (only these get it: another kernel may
# not expect 'null' for an output it always computes).
_NULL_REQ_OPS = frozenset({"_backward_FullyConnected"})
_out_specs: Dict[tuple, tuple] = {}


def _direct_outputs(plan, xs: List[Node], values: List[Optional[NDArray]]) -> Dict[int, NDArray]:
    """``{slot: x.grad}``: the gradient buffers the backward ops may write directly, for the
    variables of grad_req 'write' whose gradient is a step's own output (``Plan.sole_grads``)."""
    direct = {}
    for slot, i in plan.sole_grads.items():
        saved = xs[i].extra["ag"]
        g = saved.grad
        if saved.grad_req == "write" and g is not None and g.__class__ is NDArray:
            direct[slot] = g
    if direct:
        # A buffer the backward also reads (passed as a head gradient, or recorded as a forward
        # value) must not be overwritten before its readers ran: it keeps the copy at the end.
        # Two variables sharing one buffer keep the copies too (their order decides what stays).
        chunks: Dict[int, list] = {}
        for slot, g in direct.items():
            chunks.setdefault(id(g._chunk), []).append(slot)
        for v in values:
            if v is not None and id(v._chunk) in chunks:
                chunks[id(v._chunk)].append(None)
        for slots in chunks.values():
            if len(slots) > 1:
                for slot in slots:
                    direct.pop(slot, None)
    return direct


def _invoke_into(step, ins: List[NDArray], direct: Dict[int, NDArray]) -> List[NDArray]:
    """Run a backward step whose outputs include a variable's gradient or an unread value: the
    gradient into the variable's ``.grad`` (``direct``), an unread output with req 'null' where
    the op allows it; otherwise, or for inputs that take another path (sparse), plain ``invoke``."""
    op = step.op
    if not ins or step.params_key is None or op.sparse_from_dense:
        return _imperative.invoke(op, step.params_key, step.params, ins)
    shapes = tuple([(x._shape, x._dtype, x._sparse) for x in ins])
    key = (id(step), shapes)
    hit = _out_specs.get(key)
    if hit is None or hit[0] is not step:
        if any(x._sparse for x in ins):
            return _imperative.invoke(op, step.params_key, step.params, ins)
        out_shapes, out_dtypes = _imperative.infer_outputs(op, step.params, [x._shape for x in ins],
                                                           [x._dtype for x in ins])
        req = None
        if op.name in _NULL_REQ_OPS and any(slot is None for slot in step.outs):
            req = tuple("null" if slot is None else "write" for slot in step.outs)
        if len(_out_specs) >= 1024:
            _out_specs.clear()
        hit = _out_specs[key] = (step, tuple(zip(step.outs, out_shapes, out_dtypes)), req)
    _, outs, req = hit
    ctx = ins[0]._chunk.ctx
    out, into_grad = [], False
    for slot, shape, dtype in outs:
        g = direct.get(slot) if slot is not None else None
        if g is not None and g._shape == shape and g._dtype == dtype and g._chunk.ctx == ctx \
                and not any(x._chunk is g._chunk for x in ins):
            # (an input in the buffer: a hybridized block's backward wrote a partial gradient
            # there, which this op sums; the sum goes to a new array and ``store`` copies it)
            out.append(g)
            into_grad = True
        else:        # a new array (a buffer unlike the gradient: ``store`` copies, or raises)
            out.append(_empty(shape, ctx, dtype))
    if req is None and not into_grad:
        return _imperative.invoke(op, step.params_key, step.params, ins)
    return _imperative.invoke(op, step.params_key, step.params, ins, out, req=req)


_ones_params: Dict[tuple, tuple] = {}


def _ones_like(h: NDArray) -> NDArray:
    """The default head gradient: ``ones`` of ``h``'s shape, dtype and context, not recorded.

    On the CPU it is filled here: a brand-new variable has nothing queued on it, so no engine
    operation is needed (a training loop asks for these ones every step). Elsewhere it is an
    ``_ones`` operator, whose parameters are parsed once per (shape, dtype).
    """
    ctx = h._chunk.ctx
    if ctx.device_type == "cpu":
        ones = _empty(h._shape, ctx, h._dtype)
        ones._data().fill(1)
        return ones
    key = (h._shape, h._dtype)
    hit = _ones_params.get(key)
    if hit is None:
        op = registry.get("_ones")
        hit = _ones_params[key] = (op, *_imperative.parse_params(op, {"shape": h._shape, "dtype": h._dtype}))
    prev, _state.is_recording = _state.is_recording, False
    try:
        return _imperative.invoke(hit[0], hit[1], hit[2], [], None, ctx)[0]
    finally:
        _state.is_recording = prev


def _position(v: NDArray, index: Dict[int, int]) -> Optional[int]:
    e = v._ag
    return None if e is None else index.get(id(e.node))


def _heads(heads, head_grads) -> Tuple[List[NodeEntry], List[NDArray]]:
    """The heads' entries and their gradients (ones by default)."""
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    if head_grads is None or isinstance(head_grads, NDArray):
        head_grads = [head_grads] * len(heads) if head_grads is None else [head_grads]
    if len(head_grads) != len(heads):
        raise MXNetError(f"backward: {len(heads)} heads but {len(head_grads)} head gradients")
    ys, values = [], []
    for i, (h, g) in enumerate(zip(heads, head_grads)):
        e = _live_entry(h)
        if e is None:
            raise MXNetError(_NOT_IN_GRAPH)
        if g is None:
            g = _ones_like(h)
        elif g._shape != h._shape:
            raise MXNetError(f"backward: head gradient {i} has shape {g._shape}, but head {i} has "
                             f"shape {h._shape}")
        ys.append(e)
        values.append(g)
    return ys, values


def _targets(topo: List[Node], variables) -> List[NodeEntry]:
    """The variables to differentiate: those given, else every marked one the heads depend on."""
    if variables is None:
        xs = [NodeEntry(n, 0, 0) for n in topo
              if n.is_variable and n.extra["ag"].grad_req in ("write", "add")]
        if not xs:
            raise MXNetError("There are no inputs in computation graph that require gradients.")
        return xs
    xs = []
    for i, v in enumerate(variables):
        e = _live_entry(v)
        if e is None:
            raise MXNetError(_NOT_IN_GRAPH)
        if not e.node.is_variable or e.node.extra["ag"].grad_req in (None, "null"):
            raise MXNetError(f"Cannot differentiate with respect to the {i + 1}-th variable because it "
                             "does not require gradient.")
        xs.append(e)
    return xs


def _with_entry(v: NDArray, entry: NodeEntry) -> NDArray:
    """``v`` as an input the recorder links to ``entry`` (only when recording the backward pass)."""
    w = _alias(v)
    w._ag = entry
    return w


def backward(heads: Union[NDArray, Sequence[NDArray]], head_grads=None, retain_graph: bool = False,
             train_mode: bool = True) -> None:
    """Compute the gradients of ``heads`` and store them in the ``.grad`` of every marked variable.

    The tuned form of ``autograd_plain.backward`` (which it hands over to when the plain paths
    are selected): ``_differentiate``, then the same ``store``.

    Parameters
    ----------
    heads : NDArray or list of NDArray
        Recorded outputs to differentiate.
    head_grads : NDArray or list of (NDArray or None), optional
        The gradient flowing into each head; ``None`` means ones.
    retain_graph : bool
        Keep the recorded graph so that it can be differentiated again; otherwise it is freed and
        a second ``backward`` raises ``MXNetError``.
    train_mode : bool
        Run the backward operators in training mode.
    """
    if _imperative.is_plain():
        return _plain.backward(heads, head_grads, retain_graph, train_mode)
    prev, _state.storing_grads = _state.storing_grads, True
    try:
        xs, values, _ = _differentiate(heads, head_grads, None, retain_graph, False, train_mode)
    finally:
        _state.storing_grads = prev
    with pause():
        for x, v in zip(xs, values):
            _plain.store(x.extra["ag"], v)      # write or add into x.grad, per its grad_req


def _same_buffer(a: NDArray, b: NDArray) -> bool:
    return a is b or (a._chunk is b._chunk and a._offset == b._offset and a._shape == b._shape)


def _storing_grads() -> bool:
    """Whether the gradients now computed go to the variables' ``.grad`` (``backward``, not ``grad``).

    A hybridized block's executor may then write a parameter's gradient straight into its ``.grad``
    buffer instead of into a buffer of its own that ``backward`` would copy over.
    """
    return _state.storing_grads


def grad(heads: Union[NDArray, Sequence[NDArray]], variables: Union[NDArray, Sequence[NDArray]],
         head_grads=None, retain_graph: Optional[bool] = None, create_graph: bool = False,
         train_mode: bool = True) -> List[NDArray]:
    """Gradients of ``heads`` with respect to ``variables``, returned as new arrays (``.grad`` untouched).

    The tuned form of ``autograd_plain.grad``: ``_differentiate``, then a copy only of the values
    the backward pass did not compute itself.

    With ``create_graph=True`` the backward computation is recorded too, so the returned gradients
    can be differentiated again (a second derivative), as far as the operators' gradients go.
    ``retain_graph`` defaults to ``create_graph``.

    >>> with autograd.record():
    ...     y = f(x)
    ...     dy = autograd.grad(y, [x], create_graph=True)[0]    # f'(x), itself recorded
    >>> dy.backward()          # x.grad == f''(x), if every backward op f' used has a gradient
    """
    if _imperative.is_plain():
        return _plain.grad(heads, variables, head_grads, retain_graph, create_graph, train_mode)
    if isinstance(variables, NDArray):
        variables = [variables]
    elif not len(variables):
        raise MXNetError("grad: variables cannot be an empty list")
    if retain_graph is None:
        retain_graph = create_graph
    prev, _state.storing_grads = _state.storing_grads, False
    try:
        _, values, produced = _differentiate(heads, head_grads, variables, retain_graph,
                                             create_graph, train_mode)
    finally:
        _state.storing_grads = prev
    out = []
    with _Scope(create_graph, None):
        for v, computed in zip(values, produced):
            # A value the backward pass did not compute (a head gradient, a forward value) is copied,
            # so the caller never gets an array that aliases one of its own.
            out.append(v if computed else
                       _imperative.invoke_name("_copy", [v], {})[0])
    return out


def get_symbol(x: NDArray):
    """The recorded graph that computed ``x``, as a ``Symbol``."""
    from .symbol import Symbol  # noqa: PLC0415 - symbol imports ndarray-level modules
    e = _live_entry(x)
    if e is None:
        raise MXNetError("get_symbol: NDArray is not part of a computation graph. Did you forget to turn "
                         "on recording?")
    counts: Dict[str, int] = {}
    for n in topo_sort([e]):
        if n.is_variable:
            kind = "var"
        else:
            kind = n.op.name.lower()
            n.attrs = n.op.format_params(n.params)
        n.name = f"{kind}{counts.get(kind, 0)}"
        counts[kind] = counts.get(kind, 0) + 1
    return Symbol([e])


from . import autograd_function as _function  # noqa: E402 - registers the _CustomFunction ops
from . import autograd_plain as _plain  # noqa: E402
from . import autograd_plan as _plan  # noqa: E402
from .autograd_function import Function  # noqa: E402

# ---------------------------------------------------------------------------------------------
# NDArray._fresh_grad: MXNet's flag saying a backward has written this variable's gradient since
# someone (Gluon's Trainer, a test) last cleared it.
# ---------------------------------------------------------------------------------------------

def _variable_saved(x: NDArray) -> Optional[_Saved]:
    e = x._ag
    saved = None if e is None else e.node.extra.get("ag")
    return saved if saved is not None and saved.grad_req is not None and e.node.op is None else None


def _get_fresh_grad(self: NDArray) -> bool:
    saved = _variable_saved(self)
    return bool(saved.fresh) if saved is not None else False


def _set_fresh_grad(self: NDArray, value: bool) -> None:
    saved = _variable_saved(self)
    if saved is None:
        raise MXNetError("_fresh_grad: the array is not a variable with a gradient buffer "
                         "(attach_grad or mark_variables first)")
    saved.fresh = bool(value)


NDArray._fresh_grad = property(_get_fresh_grad, _set_fresh_grad,
                               doc="Whether a backward wrote this variable's gradient since the flag "
                                   "was cleared.")
