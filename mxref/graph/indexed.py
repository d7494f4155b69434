"""``Graph`` (output entries + the attributes passes computed) and its ``IndexedGraph`` view.

Attributes live in ``graph.attrs`` and are indexed by node id (per-node data) or by entry id
(``"shape"``, ``"dtype"``, ``"storage_id"``), exactly as nnvm stores them.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

from .node import Node, NodeEntry
from .traverse import topo_sort

__all__ = ["Graph", "IndexedGraph"]


class IndexedGraph:
    """Integer ids for nodes (topological order) and entries (``entry_id(nid, index)``).

    ``input_nodes`` are variable nodes in order of first appearance; ``mutable_input_nodes`` those
    an operator writes (auxiliary states), ``arg_nodes`` the rest.
    """

    def __init__(self, outputs: Sequence[NodeEntry]):
        self.nodes: List[Node] = topo_sort(outputs)
        self.node_id: Dict[int, int] = {id(n): i for i, n in enumerate(self.nodes)}
        self.entry_rptr: List[int] = [0]
        for n in self.nodes:
            self.entry_rptr.append(self.entry_rptr[-1] + n.num_outputs())
        self.input_nodes: List[int] = [i for i, n in enumerate(self.nodes) if n.is_variable]
        mutable = set()
        for n in self.nodes:
            if n.op is not None:
                for k in n.op.mutate_inputs(n.params):
                    if k < len(n.inputs):
                        mutable.add(self.node_id[id(n.inputs[k].node)])
        self.mutable_input_nodes: List[int] = [i for i in self.input_nodes if i in mutable]
        self.arg_nodes: List[int] = [i for i in self.input_nodes if i not in mutable]
        self.outputs: List[NodeEntry] = list(outputs)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_node_entries(self) -> int:
        return self.entry_rptr[-1]

    def entry_id(self, nid_or_entry, index: int = 0) -> int:
        """``entry_id(nid, index)`` or ``entry_id(NodeEntry)``."""
        if isinstance(nid_or_entry, NodeEntry):
            return self.entry_rptr[self.node_id[id(nid_or_entry.node)]] + nid_or_entry.index
        return self.entry_rptr[nid_or_entry] + index

    def input_entry_ids(self, nid: int) -> List[int]:
        return [self.entry_id(e) for e in self.nodes[nid].inputs]

    def output_entry_ids(self) -> List[int]:
        return [self.entry_id(e) for e in self.outputs]


class Graph:
    """A computation graph: its output entries plus the attributes passes computed."""

    def __init__(self, outputs: Sequence[NodeEntry], attrs: Dict = None):
        self.outputs: List[NodeEntry] = list(outputs)
        self.attrs: Dict = dict(attrs or {})
        self._indexed = None

    @property
    def indexed(self) -> IndexedGraph:
        if self._indexed is None:
            self._indexed = IndexedGraph(self.outputs)
        return self._indexed
