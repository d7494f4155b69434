"""``cast_storage``: the same values in another storage type; ``_sparse_retain``: keep some rows.

Math: ``cast_storage(x, stype)`` equals ``x`` elementwise (csr keeps the nonzero entries,
row_sparse the rows holding a nonzero); its gradient is the head gradient (``_copy``).
``_sparse_retain(x, ids)`` is ``x`` with every row whose id is not in ``ids`` zeroed, for a
row_sparse ``x``; the gradient passes ``dout`` on the kept rows (``_sparse_retain`` of it).
"""
from __future__ import annotations

import numpy as np

from ...graph import NodeEntry, make_node
from ..registry import OpDef, Param, assign, register
from .base import CSR, IDX, RowSparse, fromdense, register_storage, stype_of, todense


def _cast_dense(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], inputs[0])


def _cast_ex(octx, params, inputs, outputs, req):
    x, out = inputs[0], outputs[0]
    if params["stype"] == "default":
        assign(out, req[0], todense(x))
        return
    if stype_of(x) == params["stype"]:
        value = x
    else:
        value = fromdense(todense(x), params["stype"])
    # Copies: the output owns its memory (the input may be rewritten later).
    if isinstance(value, CSR):
        out.data, out.indices, out.indptr = np.copy(value.data), np.copy(value.indices), np.copy(value.indptr)
    else:
        out.data, out.indices = np.copy(value.data), np.copy(value.indices)


def _cast_grad(node, ograds):
    return [NodeEntry(make_node("_copy", [ograds[0]], node.name + "_backward"), 0, 0)]


def _cast_storage_types(params, in_stypes):
    return [params["stype"]]


register(OpDef("cast_storage", _cast_dense,
               params={"stype": Param("str", doc="Output storage type.",
                                      choices=("default", "row_sparse", "csr"))},
               gradient=_cast_grad,
               doc="cast_storage(data, stype): the values of ``data`` in storage type ``stype``."))
register_storage("cast_storage", _cast_storage_types, _cast_ex, sparse_from_dense=True)


# ---------------------------------------------------------------------------------------------
# _sparse_retain
# ---------------------------------------------------------------------------------------------

def _retain_rows(x: RowSparse, ids: np.ndarray) -> RowSparse:
    keep = np.isin(x.indices, ids.astype(IDX).reshape(-1))
    return RowSparse(x.data[keep], x.indices[keep], x.shape)


def _retain_dense(octx, params, inputs, outputs, req):
    x, ids = inputs
    ids = ids.astype(np.int64).reshape(-1)
    ids = ids[(ids >= 0) & (ids < x.shape[0])]
    res = np.zeros_like(x)
    res[ids] = x[ids]
    assign(outputs[0], req[0], res)


def _retain_ex(octx, params, inputs, outputs, req):
    kept = _retain_rows(inputs[0], np.asarray(inputs[1]))
    outputs[0].data, outputs[0].indices = kept.data, kept.indices


def _retain_shape(params, in_shapes):
    return list(in_shapes), [in_shapes[0]]


def _retain_type(params, in_types):
    return list(in_types), [in_types[0]]


def _retain_storage(params, in_stypes):
    if in_stypes[0] != "row_sparse" or in_stypes[1] != "default":
        return None
    return ["row_sparse"]


def _retain_grad(node, ograds):
    n = make_node("_sparse_retain", [ograds[0], node.inputs[1]], node.name + "_backward")
    return [NodeEntry(n, 0, 0), None]


register(OpDef("_sparse_retain", _retain_dense, arguments=("data", "indices"), infer_shape=_retain_shape,
               infer_type=_retain_type, gradient=_retain_grad,
               doc="sparse.retain(data, indices): the rows of row_sparse ``data`` listed in ``indices``."))
register_storage("_sparse_retain", _retain_storage, _retain_ex)
