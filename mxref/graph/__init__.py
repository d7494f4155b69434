"""The graph IR, the ground floor: nodes and entries, graphs and their indexed view, traversal, passes.

Everything that reasons about computation graphs stands on this package: operator gradients
(``mxref/ops``) build nodes, the passes (``mxref/passes``) annotate graphs, ``Symbol`` wraps output
entries, autograd records nodes and the executor runs them. It imports nothing above
``mxref.base``, so any of them can import it without a cycle (``docs/architecture/overview.md``).

* ``node.py``          — ``Node``, ``NodeEntry``, ``make_node``
* ``traverse.py``      — ``topo_sort``, ``copy_graph``
* ``indexed.py``       — ``Graph`` (outputs + attributes) and ``IndexedGraph`` (integer ids)
* ``pass_registry.py`` — ``register_pass`` / ``apply_pass``: passes declare what they require and provide
"""
from .indexed import Graph, IndexedGraph
from .node import Node, NodeEntry, make_node, node_entries, set_op_lookup
from .pass_registry import PassInfo, apply_pass, apply_passes, list_passes, register_pass
from .traverse import copy_graph, topo_sort

__all__ = ["Node", "NodeEntry", "make_node", "node_entries", "set_op_lookup", "topo_sort", "copy_graph",
           "Graph", "IndexedGraph", "PassInfo", "register_pass", "apply_pass", "apply_passes",
           "list_passes"]
