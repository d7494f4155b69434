"""``linalg.potrf`` (Cholesky factor), ``linalg.potri`` (inverse from the factor) and
``linalg.sumlogdiag`` (sum of the logs of the diagonal), on batches of square matrices.

    potrf   A = L L^T, out = L lower triangular (zeros above); lower=False: A = U^T U, out = U
            (only A's lower, or upper, triangle is read)
    potri   out = (L L^T)^-1 from L's triangle; lower=False: (U^T U)^-1
    sumlogdiag   out = sum_i log A_ii    (one number per matrix)

Gradients (MXNet's ``potrf_backward`` / ``potri_backward``), G the head gradient, copyLTU(M) the
symmetric matrix with M's lower triangle (copyUTL: upper):

    potrf   dA = 1/2 L^-T copyLTU(L^T G) L^-1            upper: 1/2 U^-1 copyUTL(G U^T) U^-T
    potri   dL = -tril(out (G + G^T) L^-T)                upper: -triu(U^-T (G + G^T) out)
    sumlogdiag   dA = diag(G / A_ii)

potrf's dA is symmetric: a gradient with respect to a symmetric A, as MXNet gives it.
"""
from __future__ import annotations

import numpy as np

from ..registry import OpDef, Param, assign, register
from ._common import (
    T,
    batched,
    float_type,
    grad_use,
    lapack,
    matmul,
    need_matrices,
    pick,
    register_la,
    square_shape,
    sym_from,
    tri,
    tri_inv,
)

PARAMS = {"lower": Param("bool", True, "True if the triangular matrix is lower triangular, false if it "
                                       "is upper triangular.")}


BLOCK = 64      # the panel width of the blocked factorization of large matrices


def cholesky(a: np.ndarray, out: np.ndarray = None) -> np.ndarray:
    """Lower Cholesky factors of a batch (only the lower triangles read); the blocked path writes
    them into ``out`` when given (a C-contiguous array of a's shape, which may be ``a`` itself).

    numpy's potrf, split over the batch, except for large float32 matrices: those are factored
    right-looking by panels of ``BLOCK`` columns, so that most of the work, the trailing update
    A22 -= L21 L21^T, is an sgemm. Measured on 512 x 512 float32 (one thread, best of 30): 3.0 ms
    blocked against 7.2 ms for numpy's spotrf; splitting the updates over the operator threads
    took 4.4 ms (eight hand-offs of small GEMMs), so the panels run on the calling thread. In
    float64, and below 8 panels, numpy's own was as fast or faster, so those stay with it.
    """
    n = a.shape[-1]
    if n < 8 * BLOCK or a.dtype != np.float32:
        return batched(np.linalg.cholesky, a)
    w = out if out is not None else np.empty(a.shape, a.dtype)
    w[...] = a
    for k in range(0, n, BLOCK):
        e = min(k + BLOCK, n)
        l11 = np.linalg.cholesky(w[..., k:e, k:e])
        w[..., k:e, k:e] = l11
        if e < n:
            l21 = np.matmul(w[..., e:, k:e], T(tri_inv(l11, True)))      # L21 = A21 L11^-T
            w[..., e:, k:e] = l21
            w[..., e:, e:] -= np.matmul(l21, T(l21))
    w *= np.tri(n, dtype=w.dtype)       # zeros above the diagonal
    return w


def _potrf(octx, p, inputs, outputs, req):
    # The upper factor of A is the transposed lower factor of A^T (whose lower triangle is A's upper).
    src = inputs[0] if p["lower"] else T(inputs[0])
    into = p["lower"] and req[0] in ("write", "inplace") and outputs[0].flags.c_contiguous
    fac = lapack("potrf", lambda: cholesky(src, outputs[0] if into else None),
                 "the input matrix is not symmetric positive definite")
    if fac is not outputs[0]:
        assign(outputs[0], req[0], fac if p["lower"] else T(fac))


def _potrf_backward(octx, p, inputs, outputs, req):
    g, fac = inputs
    inv = tri_inv(fac, p["lower"])
    if p["lower"]:
        m = sym_from(matmul(T(fac), g), lower=True)
        da = matmul(matmul(T(inv), m), inv)
    else:
        m = sym_from(matmul(g, T(fac)), lower=False)
        da = matmul(matmul(inv, m), T(inv))
    assign(outputs[0], req[0], da * da.dtype.type(0.5))


def _potri(octx, p, inputs, outputs, req):
    inv = lapack("potri", lambda: tri_inv(inputs[0], p["lower"]), "the triangular factor is singular")
    assign(outputs[0], req[0], matmul(T(inv), inv) if p["lower"] else matmul(inv, T(inv)))


def _potri_backward(octx, p, inputs, outputs, req):
    g, fac, out = inputs
    s = g + T(g)
    inv_t = T(tri_inv(fac, p["lower"]))
    d = matmul(matmul(out, s), inv_t) if p["lower"] else matmul(matmul(inv_t, s), out)
    assign(outputs[0], req[0], -tri(d, p["lower"]))


for _name, _fwd, _bwd, _use_in in (("potrf", _potrf, _potrf_backward, False),
                                   ("potri", _potri, _potri_backward, True)):
    register_la(_name, _fwd, arguments=("A",), params=PARAMS, infer_shape=square_shape(_name),
                infer_type=float_type(), inplace=[(0, 0)], doc=__doc__,
                gradient=grad_use(f"_backward_linalg_{_name}", use_in=_use_in, use_out=True))
register(OpDef("_backward_linalg_potrf", _potrf_backward, arguments=("ograd", "L"), params=PARAMS,
               infer_shape=pick(1), infer_type=pick(1)))
register(OpDef("_backward_linalg_potri", _potri_backward, arguments=("ograd", "A", "A_inv"), params=PARAMS,
               infer_shape=pick(1), infer_type=pick(1)))


def _reduce_shape(p, in_shapes):
    a = in_shapes[0]
    if a is None:
        return list(in_shapes), [None]
    need_matrices("sumlogdiag", "A", a, square=True)
    return list(in_shapes), [tuple(a[:-2]) or (1,)]


def _sumlogdiag(octx, p, inputs, outputs, req):
    d = np.diagonal(inputs[0], axis1=-2, axis2=-1)
    assign(outputs[0], req[0], np.log(d).sum(axis=-1).reshape(outputs[0].shape))


def _sumlogdiag_backward(octx, p, inputs, outputs, req):
    g, a = inputs
    da = np.zeros_like(a)
    diag = np.einsum("...ii->...i", da)        # a writable view of the diagonals
    diag[...] = g.reshape(a.shape[:-2] + (1,)) / np.diagonal(a, axis1=-2, axis2=-1)
    assign(outputs[0], req[0], da)


register_la("sumlogdiag", _sumlogdiag, arguments=("A",), infer_shape=_reduce_shape, infer_type=float_type(),
            doc=__doc__, gradient=grad_use("_backward_linalg_sumlogdiag", use_in=True))
register(OpDef("_backward_linalg_sumlogdiag", _sumlogdiag_backward, arguments=("ograd", "A"),
               infer_shape=pick(1), infer_type=pick(1)))
