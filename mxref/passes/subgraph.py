"""The subgraph service of the control-flow operators: infer, run and differentiate a subgraph.

``_foreach``, ``_while_loop`` and ``_cond`` (``mxref/ops/control_flow``) hold their bodies as
subgraphs and ask this module, installed into them at import, for three things:

* ``infer``: a subgraph's shapes or dtypes from partial ones, by the same sweep the graph passes
  run (``infer_graph_attr``), seeded at both ends: the inputs *and* the outputs;
* ``run``: the subgraph's outputs for input arrays. A subgraph is compiled once per input
  shapes and dtypes (topological order, every node's kernel and output shapes, like a tiny
  ``CachedOp``), then each call runs the kernels in order on numpy arrays. It runs inside the
  loop operator's own engine operation, so it calls kernels directly and never waits on the
  engine;
* ``grad``: the gradient of every subgraph input, from the gradient graph of the subgraph (the
  ``gradient`` pass with one head-gradient variable per output), compiled and run the same way.
"""
from __future__ import annotations

import threading
import weakref
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..base import MXNetError
from ..graph import Graph, Node, NodeEntry
from ..ops.control_flow.common import install_subgraph_service
from ..ops.registry import OpContext, get_kernel
from .gradient import gradient
from .infer_shape import SHAPE_RULE, infer_graph_attr
from .infer_type import DTYPE_RULE

__all__ = ["SubgraphService", "SERVICE"]

_RULES = {"shape": SHAPE_RULE, "dtype": DTYPE_RULE}


class _Scratch:
    """A ``temp_space`` (or, when the loop has none to lend, ``random``) resource for one node."""

    def __init__(self, kind: str, seed: int = 0):
        self.kind = kind
        self.generator = np.random.default_rng(seed) if kind == "random" else None

    def get_space(self, nbytes: int) -> np.ndarray:
        return np.empty(nbytes, dtype=np.uint8)


def _infer(outputs: Sequence[NodeEntry], inputs: Sequence[Node], kind: str,
           in_values: Sequence, out_values: Sequence):
    """Run the ``kind`` sweep on the graph of ``outputs`` seeded with values for ``inputs`` (some
    may be ``None``) and for the outputs; returns the values of both afterwards."""
    graph = Graph(outputs)
    idx, rule = graph.indexed, _RULES[kind]
    values = [None] * idx.num_node_entries
    in_eids = [idx.entry_id(idx.node_id[id(n)], 0) if id(n) in idx.node_id else None for n in inputs]
    for eid, v in [*zip(in_eids, in_values), *zip(idx.output_entry_ids(), out_values)]:
        if eid is not None and v is not None:
            try:
                values[eid] = rule.merge(values[eid], v)
            except ValueError:
                raise MXNetError(f"{rule.pass_name}: a subgraph entry has {rule.name} "
                                 f"{rule.fmt(values[eid])} but {rule.fmt(v)} is given") from None
    graph.attrs[kind] = values
    infer_graph_attr(graph, rule)
    values = graph.attrs[kind]
    return ([None if e is None else values[e] for e in in_eids],
            [values[e] for e in idx.output_entry_ids()])


class _Compiled:
    """A graph made ready to run on arrays of given shapes and dtypes.

    ``forward_nodes`` (ids of nodes) splits the steps in two parts that run separately: a
    gradient graph's forward part while the loop replays its steps, its backward part later.
    """

    def __init__(self, outputs: Sequence[NodeEntry], inputs: Sequence[Node], shapes, dtypes,
                 forward_nodes: frozenset = frozenset()):
        graph = Graph(outputs)
        idx = graph.indexed
        shape, dtype = _infer_all(graph, "shape", inputs, shapes), _infer_all(graph, "dtype", inputs, dtypes)
        self.num_entries = idx.num_node_entries
        self.in_eids = [idx.entry_id(idx.node_id[id(n)], 0) if id(n) in idx.node_id else None
                        for n in inputs]
        self.out_eids = idx.output_entry_ids()
        self.out_shapes = [shape[e] for e in self.out_eids]
        self.out_dtypes = [dtype[e] for e in self.out_eids]
        self.steps = []
        for nid, node in enumerate(idx.nodes):
            if node.is_variable:
                continue
            out_eids = [idx.entry_id(nid, i) for i in range(node.num_outputs())]
            specs = [(shape[e], dtype[e]) for e in out_eids]
            if any(s is None or 0 in s or t is None for s, t in specs):
                raise MXNetError(f"subgraph: cannot infer the outputs of node {node.name} "
                                 f"({node.op.name}) from input shapes {list(shapes)}")
            self.steps.append((node, get_kernel(node.op, "cpu"), idx.input_entry_ids(nid), out_eids,
                               specs, id(node) in forward_nodes))

    def start(self, arrays: Sequence[Optional[np.ndarray]]) -> List[Optional[np.ndarray]]:
        """The value of every entry, the inputs' filled in."""
        values: List[Optional[np.ndarray]] = [None] * self.num_entries
        for eid, a in zip(self.in_eids, arrays):
            if eid is not None:
                values[eid] = a
        return values

    def run(self, arrays: Sequence[np.ndarray], octx) -> List[np.ndarray]:
        values = self.start(arrays)
        self.run_steps(values, octx)
        return [values[e] for e in self.out_eids]

    def run_steps(self, values: list, octx, part: Optional[bool] = None) -> None:
        """Run every step (``part`` None), or only the forward (True) or backward (False) ones."""
        lent = {r.kind: r for r in getattr(octx, "resources", ())}
        is_train = getattr(octx, "is_train", False)
        for node, kernel, in_eids, out_eids, specs, is_forward in self.steps:
            if part is not None and is_forward != part:
                continue
            outs = [np.empty(s, dtype=t) for s, t in specs]
            res = [lent.get(kind) or _Scratch(kind) for kind in node.op.resources]
            kernel(OpContext(is_train, getattr(octx, "ctx", None), res), node.params,
                   [values[e] for e in in_eids], outs, ["write"] * len(outs))
            for e, o in zip(out_eids, outs):
                values[e] = o


def _infer_all(graph: Graph, kind: str, inputs: Sequence[Node], given) -> list:
    idx = graph.indexed
    by_node = {id(n): v for n, v in zip(inputs, given)}
    return infer_graph_attr(graph, _RULES[kind],
                            [by_node.get(id(idx.nodes[nid])) for nid in idx.input_nodes]).attrs[kind]


class SubgraphService:
    """Infers, runs and differentiates subgraphs, caching a compiled plan per input signature."""

    def __init__(self):
        self._plans: "weakref.WeakKeyDictionary[Graph, Dict]" = weakref.WeakKeyDictionary()
        self._grads: "weakref.WeakKeyDictionary[Graph, tuple]" = weakref.WeakKeyDictionary()
        # loop kernels of several executors may run at once on the engine's worker threads
        self._lock = threading.Lock()

    @staticmethod
    def inputs_of(graph: Graph) -> List[Node]:
        """The subgraph's input variables, in ``list_inputs`` order (how the ``*_locs`` count)."""
        idx = graph.indexed
        return [idx.nodes[nid] for nid in idx.input_nodes]

    def infer(self, graph: Graph, kind: str, in_values: list, out_values: list):
        return _infer(graph.outputs, self.inputs_of(graph), kind, in_values, out_values)

    def _plan(self, graph: Graph, key: str, outputs, inputs, shapes, dtypes, forward=frozenset()):
        sig = (key, tuple(shapes), tuple(dtypes))
        with self._lock:
            plans = self._plans.setdefault(graph, {})
            plan = plans.get(sig)
            if plan is None:
                plan = plans[sig] = _Compiled(outputs, inputs, sig[1], sig[2], forward)
        return plan

    def _forward_plan(self, graph: Graph, arrays) -> _Compiled:
        return self._plan(graph, "forward", graph.outputs, self.inputs_of(graph),
                          [a.shape for a in arrays], [a.dtype for a in arrays])

    def run(self, graph: Graph, inputs: Sequence[np.ndarray], octx) -> List[np.ndarray]:
        arrays = [np.asarray(a) for a in inputs]
        return self._forward_plan(graph, arrays).run(arrays, octx)

    def _grad_graph(self, graph: Graph):
        """The subgraph's training graph, as ``(outputs, inputs, forward node ids, head_of)``:
        outputs are the subgraph's outputs then one gradient per subgraph input; inputs are the
        subgraph's inputs then one head-gradient variable per *distinct* output entry, and
        ``head_of[i]`` is the head of output ``i`` (an entry returned twice, as a step output and
        as a state, takes the sum of both gradients: the gradient pass wants each ``y`` once)."""
        with self._lock:
            cached = self._grads.get(graph)
            if cached is None:
                xs = self.inputs_of(graph)
                first: Dict[tuple, int] = {}
                head_of = [first.setdefault((id(e.node), e.index), len(first)) for e in graph.outputs]
                ys = [graph.outputs[head_of.index(k)] for k in range(len(first))]
                heads = [Node(None, f"_head_grad_{i}") for i in range(len(ys))]
                grads = gradient(Graph(ys), xs=[NodeEntry(x, 0, 0) for x in xs], ys=ys,
                                 ys_out_grad=[NodeEntry(h, 0, 0) for h in heads])
                forward = frozenset(id(n) for n in graph.indexed.nodes)
                cached = self._grads[graph] = (list(graph.outputs) + grads.outputs, xs + heads,
                                               forward, head_of)
        return cached

    def record(self, graph: Graph, inputs: Sequence[np.ndarray], octx):
        """Run the subgraph keeping every intermediate value: ``(outputs, tape)`` for ``grad``."""
        arrays = [np.asarray(a) for a in inputs]
        fwd = self._forward_plan(graph, arrays)
        outputs, grad_inputs, forward, head_of = self._grad_graph(graph)
        firsts = [head_of.index(k) for k in range(max(head_of, default=-1) + 1)]
        plan = self._plan(graph, "gradient", outputs, grad_inputs,
                          [a.shape for a in arrays] + [fwd.out_shapes[i] for i in firsts],
                          [a.dtype for a in arrays] + [fwd.out_dtypes[i] for i in firsts], forward)
        values = plan.start(arrays)
        plan.run_steps(values, octx, part=True)
        n = len(graph.outputs)
        return [values[e] for e in plan.out_eids[:n]], (plan, values, len(arrays), head_of)

    def grad(self, graph: Graph, tape, head_grads: Sequence, octx) -> List[np.ndarray]:
        """The gradient of every subgraph input, from a ``record`` tape and the outputs' gradients
        (``None``: zero), running only the backward part of the training graph."""
        plan, values, n_in, head_of = tape
        n = len(graph.outputs)
        summed: List[Optional[np.ndarray]] = [None] * len(plan.in_eids[n_in:])
        for k, g in zip(head_of, head_grads):
            if g is not None:
                summed[k] = np.array(g, copy=True) if summed[k] is None else summed[k] + g
        for k, eid in enumerate(plan.in_eids[n_in:]):
            if eid is not None:
                i = head_of.index(k)
                values[eid] = np.zeros(plan.out_shapes[i], plan.out_dtypes[i]) if summed[k] is None \
                    else summed[k]
        plan.run_steps(values, octx, part=False)
        return [values[e] for e in plan.out_eids[n:]]


SERVICE = SubgraphService()
install_subgraph_service(SERVICE)
