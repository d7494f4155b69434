"""``Graph`` (outputs + computed attributes), its ``IndexedGraph`` view, and the pass registry.

A pass is a function ``graph -> graph`` registered with the attributes it *requires* and
*provides* (nnvm's ``NNVM_REGISTER_PASS``). Attributes live in ``graph.attrs`` and are indexed by
node id (``"op_attrs"``-style per-node data) or by entry id (``"shape"``, ``"dtype"``,
``"storage_id"``), exactly as nnvm stores them.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence

from ..base import MXNetError
from ..symbol.graph import Node, NodeEntry, topo_sort

__all__ = ["Graph", "IndexedGraph", "PassInfo", "register_pass", "apply_pass", "apply_passes",
           "list_passes"]


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


class PassInfo:
    __slots__ = ("name", "fn", "requires", "provides", "doc")

    def __init__(self, name, fn, requires, provides, doc):
        self.name, self.fn, self.requires, self.provides, self.doc = name, fn, requires, provides, doc


_PASSES: Dict[str, PassInfo] = {}


def register_pass(name: str, requires: Sequence[str] = (), provides: Sequence[str] = ()) -> Callable:
    """Decorator: ``@register_pass("plan_memory", requires=["shape", "dtype"], provides=["storage_id"])``."""
    def deco(fn):
        if name in _PASSES:
            raise MXNetError(f"graph pass {name} is already registered")
        _PASSES[name] = PassInfo(name, fn, tuple(requires), tuple(provides), fn.__doc__ or "")
        return fn
    return deco


def apply_pass(graph: Graph, name: str, **kwargs) -> Graph:
    """Run one pass after checking the attributes it requires are present."""
    if name not in _PASSES:
        raise MXNetError(f"unknown graph pass {name!r}; registered: {sorted(_PASSES)}")
    info = _PASSES[name]
    missing = [a for a in info.requires if a not in graph.attrs]
    if missing:
        raise MXNetError(f"graph pass {name} requires attributes {missing}; run the passes that "
                         f"provide them first")
    out = info.fn(graph, **kwargs)
    for a in info.provides:
        if a not in out.attrs:
            raise MXNetError(f"graph pass {name} did not provide attribute {a!r}")
    return out


def apply_passes(graph: Graph, names: Sequence[str], **kwargs) -> Graph:
    for name in names:
        graph = apply_pass(graph, name, **kwargs)
    return graph


def list_passes() -> Dict[str, PassInfo]:
    return dict(_PASSES)
