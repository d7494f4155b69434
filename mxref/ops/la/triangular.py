"""``linalg.trmm``, ``linalg.trsm`` (products with a triangular matrix and its inverse) and
``linalg.syrk`` (a matrix times its own transpose).

Only the triangle of A named by ``lower`` is read (BLAS's convention); op(A) is A or A^T
(``transpose``); ``rightside`` puts op(A) on the right:

    trmm   out = alpha * op(A) @ B        or  alpha * B @ op(A)
    trsm   out = alpha * op(A)^-1 @ B     or  alpha * B @ op(A)^-1
    syrk   out = alpha * A @ A^T          or  alpha * A^T @ A   (transpose)

Gradients (MXNet's ``trmm_backward`` / ``trsm_backward`` / ``syrk_backward``), G the head gradient,
each dA cut to A's triangle:

    trmm   dB = trmm(A, G, alpha, transpose=not transpose)       dA = alpha * (G B^T or B^T G, ...)
    trsm   dB = trsm(A, G, alpha, transpose=not transpose)       dA = -(dB C^T or C^T dB, ...) / alpha
    syrk   dA = alpha * (G + G^T) @ A                            or  alpha * A @ (G + G^T)

(the "..." transposes the product when ``transpose`` is set: dA is d op(A), transposed back).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._common import T, float_type, grad_use, matmul, need_matrices, pick, public, register_la, tri

PARAMS = {"transpose": Param("bool", False, "Use transposed of the triangular matrix"),
          "rightside": Param("bool", False,
                             "Multiply triangular matrix from the right to non-triangular one."),
          "lower": Param("bool", True, "True if the triangular matrix is lower triangular, false if it is "
                                       "upper triangular."),
          "alpha": Param("float", 1.0, "Scalar factor to be applied to the result.")}


def _tri_shape(op: str):
    def infer_shape(p, in_shapes):
        a, b = in_shapes
        if a is None or b is None:
            return list(in_shapes), [b]
        need_matrices(op, "A", a, square=True)
        need_matrices(op, "B", b)
        if len(a) != len(b) or a[:-2] != b[:-2]:
            raise MXNetError(f"{public(op)}: shapes of A {tuple(a)} and B {tuple(b)} must be the same "
                             "except on the last two dimensions")
        if a[-1] != (b[-1] if p["rightside"] else b[-2]):
            raise MXNetError(f"{public(op)}: incompatible matrix dimensions: triangular A {tuple(a)} and "
                             f"B {tuple(b)} (rightside={p['rightside']})")
        return list(in_shapes), [tuple(b)]
    return infer_shape


def _op_a(p, a):
    t = tri(a, p["lower"])
    return T(t) if p["transpose"] else t


def _apply(p, a, b, alpha, inverse=False):
    """alpha * op(A) @ b (or b @ op(A); op(A)^-1 with ``inverse``)."""
    m = _op_a(p, a)
    if inverse:     # B @ M^-1 = (M^-T @ B^T)^T: both sides are one batched solve
        r = (T(np.linalg.solve(T(m), T(b))) if p["rightside"] else np.linalg.solve(m, b))
    else:
        r = matmul(b, m) if p["rightside"] else matmul(m, b)
    return r * r.dtype.type(alpha) if alpha != 1.0 else r


def _trmm(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], _apply(p, inputs[0], inputs[1], p["alpha"]))


def _trsm(octx, p, inputs, outputs, req):
    try:
        assign(outputs[0], req[0], _apply(p, inputs[0], inputs[1], p["alpha"], inverse=True))
    except np.linalg.LinAlgError:
        raise MXNetError(f"{public('trsm')}: the triangular matrix A is singular") from None


def _d_tri(p, g, x, scale):
    """d op(A) for out = op(A) @ x (or x @ op(A)) given dout ``g``, as a gradient of A's triangle."""
    d = matmul(x, g) if p["rightside"] else matmul(g, x)     # g x^T (left) / x^T g (right)
    d = T(d) if p["transpose"] else d
    return tri(d * d.dtype.type(scale), p["lower"])


def _trmm_backward(octx, p, inputs, outputs, req):
    g, a, b = inputs
    assign(outputs[0], req[0], _d_tri(p, g, T(b), p["alpha"]))
    assign(outputs[1], req[1], _apply(dict(p, transpose=not p["transpose"]), a, g, p["alpha"]))


def _trsm_backward(octx, p, inputs, outputs, req):
    g, a, _, c = inputs
    db = _apply(dict(p, transpose=not p["transpose"]), a, g, p["alpha"], inverse=True)
    assign(outputs[0], req[0], _d_tri(p, db, T(c), -1.0 / p["alpha"]))
    assign(outputs[1], req[1], db)


register_la("trmm", _trmm, arguments=("A", "B"), params=PARAMS, infer_shape=_tri_shape("trmm"),
            infer_type=float_type(), inplace=[(1, 0)], doc=__doc__,
            gradient=grad_use("_backward_linalg_trmm", use_in=True, n_in=2))
register(OpDef("_backward_linalg_trmm", _trmm_backward, arguments=("ograd", "A", "B"), params=PARAMS,
               outputs=("A_grad", "B_grad"), infer_shape=pick(1, 2), infer_type=pick(1, 2)))
register_la("trsm", _trsm, arguments=("A", "B"), params=PARAMS, infer_shape=_tri_shape("trsm"),
            infer_type=float_type(), inplace=[(1, 0)], doc=__doc__,
            gradient=grad_use("_backward_linalg_trsm", use_in=True, use_out=True, n_in=2))
register(OpDef("_backward_linalg_trsm", _trsm_backward, arguments=("ograd", "A", "B", "C"),
               params=PARAMS, outputs=("A_grad", "B_grad"), ignore_inputs=(2,), infer_shape=pick(1, 2),
               infer_type=pick(1, 2)))

SYRK_PARAMS = {"transpose": Param("bool", False, "Use transpose of input matrix."),
               "alpha": Param("float", 1.0, "Scalar factor to be applied to the result.")}


def _syrk_shape(p, in_shapes):
    a = in_shapes[0]
    if a is None:
        return list(in_shapes), [None]
    need_matrices("syrk", "A", a)
    n = a[-1] if p["transpose"] else a[-2]
    return list(in_shapes), [tuple(a[:-2]) + (n, n)]


def _syrk(octx, p, inputs, outputs, req):
    a = inputs[0]
    r = matmul(T(a), a) if p["transpose"] else matmul(a, T(a))
    assign(outputs[0], req[0], r * r.dtype.type(p["alpha"]) if p["alpha"] != 1.0 else r)


def _syrk_backward(octx, p, inputs, outputs, req):
    g, a = inputs
    s = g + T(g)
    r = matmul(a, s) if p["transpose"] else matmul(s, a)
    assign(outputs[0], req[0], r * r.dtype.type(p["alpha"]))


register_la("syrk", _syrk, params=SYRK_PARAMS, arguments=("A",), infer_shape=_syrk_shape,
            infer_type=float_type(), doc=__doc__, gradient=grad_use("_backward_linalg_syrk", use_in=True))
register(OpDef("_backward_linalg_syrk", _syrk_backward, arguments=("ograd", "A"), params=SYRK_PARAMS,
               infer_shape=pick(1), infer_type=pick(1)))
