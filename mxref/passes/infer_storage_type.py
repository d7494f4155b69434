"""Graph pass ``infer_storage_type``: the storage type of every entry and how each node runs.

One forward sweep in topological order (MXNet's ``InferStorageType`` with its dispatch modes):

* variables take the stype the caller gives (``storage_inputs``, name -> stype), else their
  ``__storage_type__`` attribute (``mx.sym.Variable(stype=...)``; 0 default, 1 row_sparse,
  2 csr), else ``'default'``;
* an operator node asks its ``OpDef.infer_storage(params, in_stypes)``: a list of output stypes
  means it has a sparse kernel for these inputs, dispatch ``'fcompute_ex'``; ``None`` means it
  has not, so its outputs are dense and, when an input is sparse, it runs the dense kernel on
  dense copies (``'fallback'``, reported once per op and stypes like ``mx.nd`` calls do);
  all-dense nodes are ``'fcompute'``.

Provides ``graph.attrs['storage_type']`` (per entry id), ``graph.attrs['dispatch_mode']`` (per
node id; ``None`` for variables) and ``graph.attrs['storage_type_num_fallbacks']``.
"""
from __future__ import annotations

from typing import Dict, Optional

from ..base import MXNetError
from ..graph import Graph, register_pass

__all__ = ["infer_storage_type", "STYPE_CODES"]

STYPE_CODES = {"0": "default", "1": "row_sparse", "2": "csr"}
_STYPES = ("default", "row_sparse", "csr")


def _variable_stype(node, given: Dict[str, str]) -> str:
    if node.name in given and given[node.name] is not None:
        stype = given[node.name]
    else:
        stype = STYPE_CODES.get(str(node.attrs.get("__storage_type__", "0")), "default")
    if stype not in _STYPES:
        raise MXNetError(f"infer_storage_type: variable '{node.name}' has unknown stype {stype!r} "
                         f"(expected one of {list(_STYPES)})")
    return stype


@register_pass("infer_storage_type", requires=(),
               provides=("storage_type", "dispatch_mode", "storage_type_num_fallbacks"))
def infer_storage_type(graph: Graph, storage_inputs: Optional[Dict[str, str]] = None, **_) -> Graph:
    """Storage types of every entry and a dispatch mode per node (see the module docstring)."""
    given = dict(storage_inputs or {})
    idx = graph.indexed
    stypes = ["default"] * idx.num_node_entries
    modes = [None] * idx.num_nodes
    fallbacks = 0
    for nid, node in enumerate(idx.nodes):
        if node.is_variable:
            stypes[idx.entry_id(nid, 0)] = _variable_stype(node, given)
            continue
        in_stypes = [stypes[idx.entry_id(e)] for e in node.inputs]
        op = node.op
        out = op.infer_storage(node.params, in_stypes) if op.infer_storage is not None else None
        n_out = node.num_outputs()
        if out is None:
            out = ["default"] * n_out
            sparse_in = any(s != "default" for s in in_stypes)
            modes[nid] = "fallback" if sparse_in else "fcompute"
            fallbacks += sparse_in
        else:
            out = list(out) + ["default"] * (n_out - len(out))
            dense = all(s == "default" for s in in_stypes + out)
            modes[nid] = "fcompute" if dense else "fcompute_ex"
        for i in range(n_out):
            stypes[idx.entry_id(nid, i)] = out[i]
    graph.attrs["storage_type"] = stypes
    graph.attrs["dispatch_mode"] = modes
    graph.attrs["storage_type_num_fallbacks"] = fallbacks
    return graph
