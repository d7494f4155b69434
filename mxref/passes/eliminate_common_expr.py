"""eliminate_common_expr: merge nodes that compute the same thing (MXNet's common subexpression
elimination, ``MXNET_ELIMINATE_COMMON_EXPR``).

Two operator nodes are the same computation when they apply the same operator, with the same
attributes, to the same input entries. Nodes are visited in topological order, so once the
inputs of two nodes have been merged the nodes themselves compare equal (``(a+b)+c`` twice
becomes one chain). As in MXNet, some nodes are never merged: variables; operators that draw on
a resource (random numbers, scratch space), mutate an input or auxiliary state, or run user
code or subgraphs. When merging leaves two graph outputs on one entry, every repeat gets an
``_copy`` of its own, so the outputs stay distinct arrays.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

from ..graph import Graph, Node, NodeEntry, make_node, register_pass, topo_sort

__all__ = ["eliminate_common_expr", "eliminate"]

_NEVER = ("Custom", "_CustomFunction", "_foreach", "_while_loop", "_cond")


def _mergeable(node: Node) -> bool:
    op = node.op
    if op is None or op.name in _NEVER or node.extra.get("subgraphs"):
        return False
    params = node.params
    return not op.resources and not op.list_aux_states(params) and not op.mutate_inputs(params)


def eliminate(outputs: Sequence[NodeEntry]) -> List[NodeEntry]:
    """The outputs of the graph with common subexpressions merged (the nodes are edited in place:
    pass a copy, as ``build_graph`` does)."""
    canon: Dict[int, Node] = {}
    seen: Dict[tuple, Node] = {}
    for node in topo_sort(outputs):
        node.inputs = [NodeEntry(canon.get(id(e.node), e.node), e.index, e.version) for e in node.inputs]
        if not _mergeable(node):
            continue
        key = (node.op.name, tuple(sorted(node.attrs.items())),
               tuple((id(e.node), e.index) for e in node.inputs))
        first = seen.setdefault(key, node)
        if first is not node:
            canon[id(node)] = first
    merged = [NodeEntry(canon.get(id(e.node), e.node), e.index, e.version) for e in outputs]
    out, used = [], set()
    for e in merged:
        k = (id(e.node), e.index)
        if k in used:
            e = NodeEntry(make_node("_copy", [e], e.node.name + "_copy"), 0, 0)
        used.add(k)
        out.append(e)
    return out


@register_pass("eliminate_common_expr")
def eliminate_common_expr(graph: Graph, **_) -> Graph:
    """A graph whose repeated computations are done once (see the module doc)."""
    return Graph(eliminate(graph.outputs))
