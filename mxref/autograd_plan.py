"""Backward plans: the backward pass of a recorded graph as numbered value slots, built once per
graph structure and replayed on every later graph of the same structure.

A training loop records the same graph step after step (the same operators with the same
parameters, wired the same way, keeping the same forward values). Differentiating it anew each
time (the gradient pass, a topological sort of the backward graph, counting the reads of every
value) costs more Python than running it. So ``autograd`` reduces the recorded graph to a
*structure key* and keeps, per key, a ``Plan``: where each value the backward ops read comes from
(a head gradient, a kept forward value of the i-th recorded node, a shape-only stand-in, an
earlier backward op), the backward ops in order with their input and output slots, and after
which op each slot is read for the last time. Running a plan is what ``autograd`` did before on
the freshly built backward graph, op for op, so the results are the same.
"""
from __future__ import annotations

import threading
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from .base import MXNetError
from .graph import Graph, Node, NodeEntry, topo_sort
from .passes.gradient import gradient as _gradient_pass

__all__ = ["Plan", "tape_order", "structure_key", "build_plan", "cached_plan"]

_MAX_PLANS = 64     # structures remembered (a loop over sequence lengths records one per length)
_plans: Dict[tuple, "Plan"] = {}
_lock = threading.Lock()


class Step(NamedTuple):
    """One backward op: ``op`` run on ``ins`` (slots), writing ``outs`` (slots, ``None`` for an
    output nobody reads); ``function``: the recorded node whose ``autograd.Function`` it runs."""

    op: object
    params_key: Optional[tuple]
    params: dict
    ins: Tuple[int, ...]
    outs: Tuple[Optional[int], ...]
    function: Optional[int]
    frees: Tuple[int, ...]          # slots read for the last time by this step


class Plan(NamedTuple):
    """The backward pass of one graph structure; node numbers are positions in ``topo_sort(heads)``.

    Slots ``0 .. num_heads-1`` are the head gradients.
    """

    num_slots: int
    xs: Tuple[int, ...]                                 # the variables differentiated
    sources: Tuple[Tuple[int, int, bool, int], ...]     # (slot, node, is_output, k): a kept value
    ghosts: Tuple[Tuple[int, int, int], ...]            # (slot, node, k): output k read for its shape
    steps: Tuple[Step, ...]
    grads: Tuple[int, ...]                              # the slot of each variable's gradient
    produced: Tuple[bool, ...]                          # whether a step computed it
    sole_grads: Dict[int, int]                          # slot -> i: a step's output that is the
                                                        # gradient of the i-th variable only
    direct_steps: frozenset                             # steps with such an output, or one unread


def params_key(node: Node):
    """The shape-inference cache key of a node's parameters (``None``: unhashable, do not cache)."""
    try:
        key = (node.op.name, tuple(node.params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def tape_order(ys: Sequence[NodeEntry]) -> Tuple[List[Node], Dict[int, int]]:
    """The recorded nodes reachable from ``ys``, inputs first (``topo_sort``'s order), and each
    node's position by ``id``."""
    order = topo_sort(ys)
    return order, {id(node): i for i, node in enumerate(order)}


def structure_key(topo: Sequence[Node], index: Dict[int, int]) -> Optional[tuple]:
    """What a backward plan depends on in a recorded graph, or ``None`` when it cannot be cached.

    Per node: a variable's ``grad_req``; an op's name and parameters, where its inputs come from,
    and which inputs and outputs it kept. Shapes are not part of it: the backward ops infer theirs
    when they run, and shape-only stand-ins are made from the graph at hand.
    """
    parts = []
    for n in topo:
        saved = n.extra.get("ag")
        if saved is None:
            return None
        if n.op is None:
            parts.append(saved.grad_req)
            continue
        pkey = params_key(n)
        if pkey is None:
            return None
        parts.append((pkey, tuple([(index[id(e.node)], e.index) for e in n.inputs]),
                      tuple([v is not None for v in saved.ins]),
                      tuple([type(v) is not tuple for v in saved.outs])))
    return tuple(parts)


def cached_plan(key: tuple) -> Optional[Plan]:
    return _plans.get(key)


def remember(key: tuple, plan: Plan) -> None:
    with _lock:      # (threads may differentiate at once; lookups need no lock)
        if len(_plans) >= _MAX_PLANS:
            del _plans[next(iter(_plans))]       # the oldest
        _plans[key] = plan


def build_plan(topo: List[Node], index: Dict[int, int], ys: List[NodeEntry],
               xs: List[NodeEntry], not_in_graph: str) -> Plan:
    """Run the gradient pass on the recorded graph and number every value the backward reads."""
    ograds = [NodeEntry(Node(None, f"head_grad{i}"), 0, 0) for i in range(len(ys))]
    grads = _gradient_pass(Graph(ys), xs=xs, ys=ys, ys_out_grad=ograds).outputs
    run = [n for n in topo_sort(grads) if not n.is_variable and "ag" not in n.extra]
    # Which values are read, and which of them for more than their shape (``ignore_inputs``).
    uses, read = set(), set()
    for n in run:
        for i, e in enumerate(n.inputs):
            uses.add((id(e.node), e.index))
            if i not in n.op.ignore_inputs:
                read.add((id(e.node), e.index))
    for g in grads:
        uses.add((id(g.node), g.index))
        read.add((id(g.node), g.index))
    slot_of = {(id(g.node), 0): i for i, g in enumerate(ograds)}
    sources: Dict[tuple, tuple] = {}
    for pos, n in enumerate(topo):
        saved = n.extra.get("ag")
        if saved is None:
            raise MXNetError(not_in_graph)
        for k, v in enumerate(saved.outs):
            if type(v) is not tuple and (id(n), k) in uses:
                sources[(id(n), k)] = (pos, True, k)
        for k, (e, v) in enumerate(zip(n.inputs, saved.ins)):
            if v is not None and (id(e.node), e.index) in uses:
                sources[(id(e.node), e.index)] = (pos, False, k)   # the same memory: last one wins
    num = len(ograds)
    plan_sources = []
    for key, src in sources.items():
        slot_of[key] = num
        plan_sources.append((num, *src))
        num += 1
    ghosts = []
    for pos, n in enumerate(topo):
        for k in range(len(n.extra["ag"].outs)):
            key = (id(n), k)
            if key in uses and key not in slot_of:
                if key in read:
                    raise MXNetError(f"autograd: the value of output {k} of {n.name} was not kept")
                slot_of[key] = num
                ghosts.append((num, pos, k))
                num += 1
    functions = {id(n.extra["function"]): pos for pos, n in enumerate(topo) if "function" in n.extra}
    steps, produced = [], set()
    for n in run:
        ins = tuple(slot_of[(id(e.node), e.index)] for e in n.inputs)
        outs = []
        for k in range(n.num_outputs()):
            if (id(n), k) in uses:
                slot_of[(id(n), k)] = num
                produced.add(num)
                outs.append(num)
                num += 1
            else:
                outs.append(None)
        fn = functions[id(n.extra["function"])] if "function" in n.extra else None
        steps.append([n.op, params_key(n), n.params, ins, tuple(outs), fn])
    grad_slots = tuple(slot_of[(id(g.node), g.index)] for g in grads)
    # Drop every value after its last reader, so activations are freed during backward.
    last = {}
    for i, s in enumerate(steps):
        for slot in s[3]:
            last[slot] = i
    frees = [[] for _ in steps]
    for slot, i in last.items():
        if slot not in grad_slots:
            frees[i].append(slot)
    # A computed gradient that is no other variable's may be written straight into that
    # variable's gradient buffer (``autograd._direct_outputs``) instead of being copied there.
    sole = {}
    for i, slot in enumerate(grad_slots):
        if slot in produced and grad_slots.count(slot) == 1:
            sole[slot] = i
    direct = frozenset(i for i, s in enumerate(steps)
                       if s[5] is None and any(o is None or o in sole for o in s[4]))
    return Plan(num, tuple(index[id(x.node)] for x in xs), tuple(plan_sources), tuple(ghosts),
                tuple(Step(*s, tuple(f)) for s, f in zip(steps, frees)), grad_slots,
                tuple(s in produced for s in grad_slots), sole, direct)
