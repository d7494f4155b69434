"""The graph IR's vertices: ``Node`` (one operator application or a variable) and ``NodeEntry``.

A node is one operator application (or a variable, when ``op`` is ``None``); an entry names one
output of a node. A graph is just the set of nodes reachable from its output entries.

This layer knows operators only by what a node asks of them (``parse_params``, ``num_outputs``,
``mutate_inputs``), so it imports nothing above it. ``make_node`` finds an operator by name through
the lookup the operator registry installs when it is imported (nnvm keeps its ``Op`` table at
this level for the same reason: gradients build nodes of other operators by name).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

from ..base import MXNetError

__all__ = ["Node", "NodeEntry", "make_node", "node_entries", "set_op_lookup", "lookup_op"]


def _no_registry(op_name: str):
    raise MXNetError(f"make_node({op_name!r}): no operator registry is installed (import mxref.ops)")


# name -> operator; ``mxref/ops/registry.py`` installs its ``get`` here when it is imported.
_op_lookup: Callable[[str], Any] = _no_registry


def set_op_lookup(lookup: Callable[[str], Any]) -> None:
    """Install the function ``make_node`` uses to find an operator by name."""
    global _op_lookup
    _op_lookup = lookup


def lookup_op(op_name: str) -> Any:
    """The operator registered under ``op_name`` (through the installed lookup)."""
    return _op_lookup(op_name)


class NodeEntry(NamedTuple):
    """Output ``index`` of ``node``. ``version`` counts writes to a variable (nnvm's convention)."""

    node: "Node"
    index: int = 0
    version: int = 0


class Node:
    """One vertex of the graph.

    ``attrs`` are MXNet's string attributes (what JSON stores: the op parameters the user set plus
    user attributes such as ``__shape__`` or ``__lr_mult__``); ``params`` is the parsed, typed view
    of the op parameters with defaults filled in.

    ``subgraphs`` holds the graphs a control-flow operator runs (``_foreach``'s loop body; nnvm's
    ``NodeAttrs::subgraphs``), each a ``Graph`` whose input variables are the node's inputs in the
    order the operator's ``*_locs`` parameters give. The parsed ``params`` carry them too, under
    the key ``'subgraphs'``, so an operator's rules and kernels, which see only ``params``, reach
    them (docs/architecture/control-flow.md).
    """

    __slots__ = ("op", "name", "attrs", "inputs", "control_deps", "_params", "extra", "subgraphs")

    def __init__(self, op: Optional[Any], name: str, attrs: Dict[str, str] = None,
                 inputs: Sequence[NodeEntry] = (), control_deps: Sequence["Node"] = ()):
        self.op = op
        self.name = name
        self.attrs = dict(attrs or {})
        self.inputs: List[NodeEntry] = list(inputs)
        self.control_deps: List[Node] = list(control_deps)
        self._params = None
        self.extra: Dict = {}  # pass-private data (e.g. the forward node of a backward node)
        self.subgraphs: List[Any] = []

    @property
    def is_variable(self) -> bool:
        return self.op is None

    @property
    def params(self) -> dict:
        """Parsed operator parameters (cached); ``{}`` for variables."""
        if self._params is None:
            if self.op is None:
                self._params = {}
            else:
                op_attrs = {k: v for k, v in self.attrs.items() if not k.startswith("__")}
                self._params = self.op.parse_params(op_attrs)
        if self.subgraphs and "subgraphs" not in self._params:
            self._params = dict(self._params, subgraphs=tuple(self.subgraphs))
        return self._params

    def num_outputs(self) -> int:
        return 1 if self.op is None else self.op.num_outputs(self.params)

    def __repr__(self):
        kind = "Variable" if self.op is None else self.op.name
        return f"<Node {self.name} ({kind})>"


def make_node(op_name: str, inputs: Sequence[NodeEntry], name: str,
              attrs: Dict[str, str] = None, params: dict = None) -> Node:
    """Create an op node; gradient functions use this to build ``_backward_*`` nodes.

    ``params`` (already typed) may be given instead of string ``attrs``; a backward node usually
    reuses the forward node's parameters: ``make_node('_backward_FullyConnected', ins, name,
    params=fwd.params)``.
    """
    op = lookup_op(op_name)
    node = Node(op, name, attrs, inputs)
    if params is not None:
        node._params = dict(params)
        if attrs is None:
            node.attrs = op.format_params(params)
    return node


def node_entries(node: Node) -> List[NodeEntry]:
    return [NodeEntry(node, i, 0) for i in range(node.num_outputs())]
