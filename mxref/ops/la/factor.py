"""``linalg.gelqf`` (LQ factorization) and ``linalg.syevd`` (symmetric eigendecomposition), each
with two outputs, on batches of matrices.

    gelqf   A (m x n, m <= n) = L Q: Q (m x n) with orthonormal rows, L (m x m) lower triangular.
            It is the QR factorization of A^T (A^T = Q^T L^T), the Householder reflections
            LAPACK's geqrf makes: the same signs as MXNet's (L's diagonal may be negative).
    syevd   A (n x n, symmetric, lower triangle read) = U^T diag(L) U: the rows of U are the
            eigenvectors, L the eigenvalues ascending; each row of U is signed so that its entry
            of largest magnitude (the first, on ties) is positive.

Gradients (MXNet's ``gelqf_backward`` / ``syevd_backward``), dQ, dL, dU the head gradients:

    gelqf   dA = L^-T (dQ + copyLTU(M) Q),    M = L^T dL - dQ Q^T
    syevd   dA = U^T Y U,  Y_ii = dL_i,  Y_ij = Y_ji = (X_ij - X_ji) / (2 max(L_i - L_j, eps)) for
            i > j,  X = dU U^T  (eps 1e-30 in float32, 1e-100 in float64)
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, assign, register
from ._common import (
    T,
    batched,
    float_type,
    grad_use,
    lapack,
    matmul,
    need_matrices,
    pick,
    public,
    register_la,
    sym_from,
    tri_inv,
)

TWO = ("output0", "output1")     # MXNet names neither output


def _gelqf_shape(p, in_shapes):
    a = in_shapes[0]
    if a is None:
        return list(in_shapes), [None, None]
    need_matrices("gelqf", "A", a)
    if a[-2] > a[-1]:
        raise MXNetError(f"{public('gelqf')}: input A {tuple(a)} must have no more rows than columns "
                         "(the last dimension must be >= the second to last)")
    return list(in_shapes), [tuple(a), tuple(a[:-1]) + (a[-2],)]


def _gelqf(octx, p, inputs, outputs, req):
    q, r = lapack("gelqf", lambda: np.linalg.qr(T(inputs[0])), "the factorization failed")
    assign(outputs[0], req[0], T(q))
    assign(outputs[1], req[1], T(r))


def _gelqf_backward(octx, p, inputs, outputs, req):
    dq, dl, q, fac = inputs
    m = sym_from(matmul(T(fac), dl) - matmul(dq, T(q)), lower=True)
    assign(outputs[0], req[0], matmul(T(tri_inv(fac, True)), dq + matmul(m, q)))


register_la("gelqf", _gelqf, arguments=("A",), outputs=TWO, infer_shape=_gelqf_shape,
            infer_type=float_type(2), inplace=[(0, 0)], doc=__doc__,
            gradient=grad_use("_backward_linalg_gelqf", use_out=True))
register(OpDef("_backward_linalg_gelqf", _gelqf_backward, arguments=("dQ", "dL", "Q", "L"),
               infer_shape=pick(2), infer_type=pick(2)))


def _syevd_shape(p, in_shapes):
    a = in_shapes[0]
    if a is None:
        return list(in_shapes), [None, None]
    need_matrices("syevd", "A", a, square=True)
    return list(in_shapes), [tuple(a), tuple(a[:-1])]


def _syevd(octx, p, inputs, outputs, req):
    def eigh(x):
        w, v = np.linalg.eigh(x, UPLO="L")
        return np.concatenate([T(v), w[..., None, :]], axis=-2)    # one array for ``batched``
    both = lapack("syevd", lambda: batched(eigh, inputs[0]), "the eigendecomposition did not converge")
    u, lam = both[..., :-1, :], both[..., -1, :]
    big = np.take_along_axis(u, np.abs(u).argmax(axis=-1)[..., None], axis=-1)
    assign(outputs[0], req[0], np.where(big < 0, -u, u))
    assign(outputs[1], req[1], lam)


def _syevd_backward(octx, p, inputs, outputs, req):
    du, dlam, u, lam = inputs
    x = matmul(du, T(u))
    eps = lam.dtype.type(1e-30 if lam.dtype == np.float32 else 1e-100)
    below = np.tri(lam.shape[-1], k=-1, dtype=bool)              # i > j: L_i - L_j >= 0
    gap = np.where(below, np.maximum(lam[..., :, None] - lam[..., None, :], eps) * 2, 1)
    y = np.where(below, (x - T(x)) / gap, 0)
    y = y + T(y)
    np.einsum("...ii->...i", y)[...] = dlam
    assign(outputs[0], req[0], matmul(matmul(T(u), y), u))


register_la("syevd", _syevd, alias=False, arguments=("A",), outputs=TWO, infer_shape=_syevd_shape,
            infer_type=float_type(2), inplace=[(0, 0)], doc=__doc__,
            gradient=grad_use("_backward_linalg_syevd", use_out=True))
register(OpDef("_backward_linalg_syevd", _syevd_backward, arguments=("dU", "dL", "U", "L"),
               infer_shape=pick(2), infer_type=pick(2)))
