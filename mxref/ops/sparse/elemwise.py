"""Sparse elementwise operators: unary ops that keep zeros, scalar ``*`` and ``/``, sums of
row_sparse (and csr) arrays, and ``broadcast_mul/div`` of a csr by a dense vector.

Math: a unary ``f`` with ``f(0) = 0`` (``abs``, ``sign``, ``sqrt``, ``square``, ``relu``, ...)
maps only the stored values, so the output keeps the input's pattern and stype; so do
``x * s`` and ``x / s``. ``a + b`` of two row_sparse arrays stores the union of their rows (ids
merged in order, rows present in both added); ``add_n`` folds that over its inputs. A csr times
a dense ``(1, n)`` / ``(m, 1)`` vector scales each stored value by its column's / row's entry.
With a dense operand the sum is dense: ``dense + sparse`` adds the stored values into a copy.

Gradients are the dense operators' (their ``gradient`` is unchanged); the backward ops run dense
or, where they meet sparse arrays, take these kernels again.
"""
from __future__ import annotations

import numpy as np

from .. import add_n, broadcast, elemwise, scalar  # noqa: F401 - registers the ops first
from ..registry import assign
from .base import CSR, IDX, RowSparse, fromdense, register_storage, todense

ZERO_PRESERVING = ("abs", "sign", "sqrt", "square", "relu", "negative", "round", "rint", "ceil",
                   "floor", "trunc", "fix", "expm1", "log1p", "sin", "tan", "arcsin", "arctan",
                   "sinh", "tanh", "arcsinh", "arctanh", "degrees", "radians", "_copy")
SCALING = ("_mul_scalar", "_div_scalar")


def _replace(out, value) -> None:
    out.data, out.indices = value.data, value.indices
    if isinstance(value, CSR):
        out.indptr = value.indptr


def _unary_storage(params, in_stypes):
    return [in_stypes[0]] if in_stypes[0] in ("csr", "row_sparse") else None


def _unary_ex_for(name: str):
    from ..registry import get  # noqa: PLC0415 - the dense op is this op's value map
    dense = get(name).fcompute

    def kernel(octx, params, inputs, outputs, req):
        x, out = inputs[0], outputs[0]
        values = np.empty_like(x.data)
        dense(octx, params, [x.data], [values], ["write"])
        out.data, out.indices = values, np.copy(x.indices)
        if isinstance(x, CSR):
            out.indptr = np.copy(x.indptr)

    return kernel


for _name in ZERO_PRESERVING + SCALING:
    register_storage(_name, _unary_storage, _unary_ex_for(_name))


# -------------------------------------------------------------------------------------------
# Sums: row_sparse + row_sparse = row_sparse; anything + dense = dense
# -------------------------------------------------------------------------------------------

def rsp_sum(values, signs=None) -> RowSparse:
    """The row_sparse sum of row_sparse ``values`` (``signs``: +1/-1 per value): union of the ids."""
    signs = signs or [1] * len(values)
    first = values[0]
    ids = np.unique(np.concatenate([v.indices for v in values])).astype(IDX)
    out = np.zeros((ids.size,) + tuple(first.shape[1:]), np.result_type(*[v.data for v in values]))
    for v, s in zip(values, signs):
        pos = np.searchsorted(ids, v.indices)
        if s > 0:
            out[pos] += v.data
        else:
            out[pos] -= v.data
    return RowSparse(out, ids, first.shape)


def _sum_storage(params, in_stypes):
    kinds = set(in_stypes)
    if kinds == {"row_sparse"}:
        return ["row_sparse"]
    if kinds == {"csr"} and len(in_stypes) == 2:
        return ["csr"]
    if "default" in kinds and kinds <= {"default", "row_sparse", "csr"}:
        return ["default"]
    return None


def _dense_sum(values, signs, out, req) -> None:
    acc = None
    for v, s in zip(values, signs):
        d = todense(v)
        acc = (d.copy() if s > 0 else -d) if acc is None else (acc + d if s > 0 else acc - d)
    assign(out, req[0], acc)


def _sum_ex_for(signs_of):
    def kernel(octx, params, inputs, outputs, req):
        out, signs = outputs[0], signs_of(len(inputs))
        if isinstance(out, np.ndarray):
            _dense_sum(inputs, signs, out, req)
        elif all(isinstance(v, RowSparse) for v in inputs):
            _replace(out, rsp_sum(inputs, signs))
        else:   # csr ± csr: through dense rows of the result's shape, kept csr
            acc = np.zeros(out.shape, inputs[0].dtype)
            _dense_sum(inputs, signs, acc, ["write"])
            _replace(out, fromdense(acc, "csr"))
    return kernel


register_storage(("elemwise_add", "_grad_add"), _sum_storage, _sum_ex_for(lambda n: [1] * n))
register_storage("elemwise_sub", _sum_storage, _sum_ex_for(lambda n: [1, -1]))
register_storage("add_n", _sum_storage, _sum_ex_for(lambda n: [1] * n))


# -------------------------------------------------------------------------------------------
# broadcast_mul / broadcast_div of a csr by a dense (1, n) or (m, 1) vector: csr
# -------------------------------------------------------------------------------------------

def _bcast_storage(params, in_stypes):
    return ["csr"] if tuple(in_stypes) == ("csr", "default") else None


def _bcast_ex_for(divide: bool):
    def kernel(octx, params, inputs, outputs, req):
        x, v = inputs
        out = outputs[0]
        if v.size == 1:
            factor = v.reshape(-1)[0]
        elif v.ndim == 2 and v.shape[0] == 1:
            factor = v[0, x.indices]
        elif v.ndim == 2 and v.shape[1] == 1:
            factor = v[x.row_ids(), 0]
        elif v.ndim == 1:
            factor = v[x.indices]
        else:
            factor = v[x.row_ids(), x.indices]
        out.data = (x.data / factor if divide else x.data * factor).astype(x.data.dtype, copy=False)
        out.indices, out.indptr = np.copy(x.indices), np.copy(x.indptr)
    return kernel


register_storage("broadcast_mul", _bcast_storage, _bcast_ex_for(False))
register_storage("broadcast_div", _bcast_storage, _bcast_ex_for(True))
