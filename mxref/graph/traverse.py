"""Walking the graph: a deterministic topological order, and a deep copy of the reachable nodes."""
from __future__ import annotations

from typing import Dict, List, Sequence

from .node import Node, NodeEntry

__all__ = ["topo_sort", "copy_graph"]


def topo_sort(outputs: Sequence[NodeEntry]) -> List[Node]:
    """Nodes reachable from ``outputs`` in a topological order (inputs first), deterministic."""
    order: List[Node] = []
    seen = set()        # the nodes themselves: Node hashes by identity
    for root in outputs:
        stack = [(root.node, False)]
        push = stack.append
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            push((node, True))
            if node.control_deps:
                for dep in reversed(node.control_deps):
                    if dep not in seen:
                        push((dep, False))
            for e in reversed(node.inputs):
                if e.node not in seen:
                    push((e.node, False))
    return order


def copy_graph(outputs: Sequence[NodeEntry]) -> List[NodeEntry]:
    """Deep-copy every node reachable from ``outputs``; returns the matching new outputs.

    Parsed parameters are shared (they are never mutated); ``attrs`` and ``extra`` are copied, so a
    pass may annotate the copy without touching the original (the executor owns its nodes).
    """
    new: Dict[int, Node] = {}
    for node in topo_sort(outputs):
        twin = Node(node.op, node.name, dict(node.attrs),
                    [NodeEntry(new[id(e.node)], e.index, e.version) for e in node.inputs],
                    [new[id(d)] for d in node.control_deps])
        twin._params = node._params
        twin.extra = dict(node.extra)
        twin.subgraphs = list(node.subgraphs)   # shared, like the parameters: never mutated
        new[id(node)] = twin
    return [NodeEntry(new[id(e.node)], e.index, e.version) for e in outputs]
