"""``linalg.extractdiag`` / ``linalg.makediag`` and ``linalg.extracttrian`` / ``linalg.maketrian``:
a diagonal, or a triangle, of every square matrix to a vector and back.

``offset`` k picks the diagonal (k > 0 above the main one, k < 0 below). A triangle is the lower
one for k < 0 (or k = 0 and ``lower``), the part below the k-th diagonal, packed row by row:
(|k|,0), (|k|+1,0), (|k|+1,1), ...; else the upper one, packed as the lower one of A^T (column
by column). n x n matrices have n - |k| diagonal entries and m(m+1)/2 triangle entries,
m = n - |k|.

Each pair is linear and one is the other's transpose, so each gradient is the other operator:
d extractdiag = makediag(G), d makediag = extractdiag(G), likewise for the triangles. MXNet's
backward ops keep their names (``_backward_linalg_extractdiag`` ...) and run those kernels.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._common import float_type, grad_use, need_matrices, public, register_la

DIAG = {"offset": Param("int", 0, "Offset of the diagonal versus the main diagonal. 0 corresponds to the "
                                  "main diagonal, a negative/positive value to diagonals below/above the "
                                  "main diagonal.")}
TRIAN = dict(DIAG, lower=Param("bool", True, "Refer to the lower triangular matrix if lower=true, refer to "
                                             "the upper otherwise. Only relevant when offset=0"))


def _index(p, n: int, trian: bool):
    """(rows, cols) of the packed entries of an n x n matrix, in packing order."""
    k = p["offset"]
    if not trian:
        m = np.arange(n - abs(k))
        return m + max(-k, 0), m + max(k, 0)
    r, c = np.tril_indices(n - abs(k))
    r = r + abs(k)
    return (c, r) if k > 0 or (k == 0 and not p["lower"]) else (r, c)


def _extract_shape(op, trian):
    def infer_shape(p, in_shapes):
        a = in_shapes[0]
        if a is None:
            return list(in_shapes), [None]
        need_matrices(op, "A", a, square=True)
        m = a[-1] - abs(p["offset"])
        if m <= 0:
            raise MXNetError(f"{public(op)}: illegal offset {p['offset']} for matrices of shape {tuple(a)}")
        return list(in_shapes), [tuple(a[:-2]) + ((m * (m + 1)) // 2 if trian else m,)]
    return infer_shape


def _make_shape(op, trian):
    def infer_shape(p, in_shapes):
        a = in_shapes[0]
        if a is None:
            return list(in_shapes), [None]
        if len(a) < 1:
            raise MXNetError(f"{public(op)}: input 'A' must have at least 1 dimension, got shape {tuple(a)}")
        m = a[-1]
        if trian:
            m = int(np.floor(0.5 + (np.sqrt(8 * a[-1] + 1) - 1) * 0.5))
            if m * (m + 1) // 2 != a[-1]:
                raise MXNetError(f"{public(op)}: the last axis of A {tuple(a)} is not a triangle's size "
                                 "m(m+1)/2")
        n = m + abs(p["offset"])
        return list(in_shapes), [tuple(a[:-1]) + (n, n)]
    return infer_shape


def _extract(trian):
    def fcompute(octx, p, inputs, outputs, req):
        rows, cols = _index(p, inputs[0].shape[-1], trian)
        assign(outputs[0], req[0], inputs[0][..., rows, cols])
    return fcompute


def _make(trian):
    def fcompute(octx, p, inputs, outputs, req):
        out = np.zeros(outputs[0].shape, outputs[0].dtype)
        out[(...,) + _index(p, out.shape[-1], trian)] = inputs[0]
        assign(outputs[0], req[0], out)
    return fcompute


for _name, _trian, _params in (("diag", False, DIAG), ("trian", True, TRIAN)):
    ex, mk = "extract" + _name, "make" + _name
    shapes = {ex: _extract_shape(ex, _trian), mk: _make_shape(mk, _trian)}
    kernels = {ex: _extract(_trian), mk: _make(_trian)}
    for _op, _other in ((ex, mk), (mk, ex)):
        register_la(_op, kernels[_op], arguments=("A",), params=_params, infer_shape=shapes[_op],
                    infer_type=float_type(), doc=__doc__, gradient=grad_use("_backward_linalg_" + _op))
        # The backward of one is the other: same kernel, same shape rule, ograd in.
        register(OpDef("_backward_linalg_" + _op, kernels[_other], arguments=("ograd",), params=_params,
                       infer_shape=shapes[_other], infer_type=float_type()))
