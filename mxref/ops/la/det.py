"""``linalg.inverse``, ``linalg.det`` and ``linalg.slogdet`` on batches of square matrices.

    inverse   out = A^-1                                    dA = -out^T G out^T
    det       out = det(A)                                  dA = G det(A) A^-T   (0 where det = 0)
    slogdet   sign = sign(det A), logabsdet = log|det A|    dA = G_logabsdet A^-T (0 where singular)

det and slogdet go through the LU factorization with partial pivoting, as MXNet's do: A's memory
seen column-major (as LAPACK's getrf sees it) is A^T = P L U, so det(A) = (-1)^(row swaps)
prod(diag U). The factors (``LU``, and the 1-based ``pivot`` rows, int32) are hidden outputs
that the backward reads to form A^-T without A; the gradient of ``sign`` is not propagated. A
singular matrix gives det 0 (sign 0, logabsdet -inf) and no gradient; ``inverse`` of one is an
error.
"""
from __future__ import annotations

import numpy as np

from ...graph import NodeEntry
from ..nn._util import backward_node
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
    register_la,
    square_shape,
    tri_inv,
)


def _inverse(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], lapack("inverse", lambda: batched(np.linalg.inv, inputs[0]),
                                      "the input matrix is non-invertible"))


def _inverse_backward(octx, p, inputs, outputs, req):
    g, out = inputs
    assign(outputs[0], req[0], -matmul(matmul(T(out), g), T(out)))


register_la("inverse", _inverse, arguments=("A",), infer_shape=square_shape("inverse"),
            infer_type=float_type(), inplace=[(0, 0)], doc=__doc__,
            gradient=grad_use("_backward_linalg_inverse", use_out=True))
register(OpDef("_backward_linalg_inverse", _inverse_backward, arguments=("ograd", "A_inv"),
               infer_shape=pick(1), infer_type=pick(1)))


def getrf(a: np.ndarray):
    """``(LU, pivot)`` as LAPACK's getrf leaves them in the row-major memory of ``a``: the factors of
    A^T = P L U (unit L below the diagonal, U on and above), stored transposed; pivot 1-based."""
    w = np.array(T(a), copy=True)
    n = w.shape[-1]
    flat = w.reshape(-1, n, n)
    piv = np.empty(flat.shape[:2], np.int32)
    idx = np.arange(len(flat))
    for k in range(n):
        p = k + np.abs(flat[:, k:, k]).argmax(axis=1)       # the first largest, as idamax
        piv[:, k] = p + 1
        row = flat[idx, p].copy()
        flat[idx, p] = flat[:, k]
        flat[:, k] = row
        pivot = flat[:, k, k]
        flat[:, k + 1:, k] /= np.where(pivot == 0, 1, pivot)[:, None]   # a zero pivot: column is 0
        flat[:, k + 1:, k + 1:] -= flat[:, k + 1:, k, None] * flat[:, k, None, k + 1:]
    return T(w), piv.reshape(a.shape[:-1])


def _sign_logdet(lu, piv):
    diag = np.diagonal(lu, axis1=-2, axis2=-1)
    swaps = (piv != np.arange(1, piv.shape[-1] + 1, dtype=np.int32)).sum(axis=-1)
    sign = np.where(swaps % 2 == 1, -1, 1) * np.sign(diag).prod(axis=-1)
    with np.errstate(divide="ignore"):
        return sign.astype(lu.dtype), np.log(np.abs(diag)).sum(axis=-1)


def _det(octx, p, inputs, outputs, req):
    lu, piv = getrf(inputs[0])
    sign, logdet = _sign_logdet(lu, piv)
    assign(outputs[0], req[0], (sign * np.exp(logdet)).reshape(outputs[0].shape))
    assign(outputs[1], req[1], lu)
    assign(outputs[2], req[2], piv)


def _slogdet(octx, p, inputs, outputs, req):
    lu, piv = getrf(inputs[0])
    sign, logdet = _sign_logdet(lu, piv)
    assign(outputs[0], req[0], sign.reshape(outputs[0].shape))
    assign(outputs[1], req[1], logdet.reshape(outputs[1].shape))
    assign(outputs[2], req[2], lu)
    assign(outputs[3], req[3], piv)


def _inv_t(lu, piv):
    """A^-T = (A^T)^-1 = U^-1 L^-1 P^T from getrf's factors."""
    m = T(lu)
    n = m.shape[-1]
    lower = np.tril(m, -1) + np.eye(n, dtype=m.dtype)
    upper = np.triu(m)
    diag = np.einsum("...ii->...i", upper)
    diag[diag == 0] = 1                # singular: the gradient is zeroed anyway
    x = matmul(tri_inv(upper, False), tri_inv(lower, True)).reshape(-1, n, n)
    pv, idx = piv.reshape(-1, n) - 1, np.arange(len(x))
    for k in reversed(range(n)):       # times P^T: swap the columns back, the last swap first
        col = x[:, :, k].copy()
        x[:, :, k] = x[idx, :, pv[:, k]]
        x[idx, :, pv[:, k]] = col
    return x.reshape(lu.shape)


def _det_backward(octx, p, inputs, outputs, req):
    g, value, lu, piv = inputs[0], inputs[-3], inputs[-2], inputs[-1]
    scale = g * value if len(inputs) == 4 else g     # det: G det(A); slogdet: G_logabsdet
    zero = value == 0 if len(inputs) == 4 else np.isneginf(value)
    scale = np.where(zero, 0, scale).reshape(lu.shape[:-2] + (1, 1))
    assign(outputs[0], req[0], scale * _inv_t(lu, piv))


def _det_shape(n_values):
    def infer_shape(p, in_shapes):
        a = in_shapes[0]
        if a is None:
            return list(in_shapes), [None] * (n_values + 2)
        need_matrices("det" if n_values == 1 else "slogdet", "A", a, square=True)
        return list(in_shapes), [tuple(a[:-2]) or (1,)] * n_values + [tuple(a), tuple(a[:-1])]
    return infer_shape


def _names(n):
    """MXNet's default output names (its det and slogdet name none): output0, output1, ..."""
    return tuple(f"output{i}" for i in range(n))


def _det_grad(bname, n_values):
    """MXNet's ``ReduceDetGrad``: the head gradient of det (or of logabsdet) and every output."""
    def gradient(node, ograds):
        outs = [NodeEntry(node, i, 0) for i in range(n_values + 2)]
        return [NodeEntry(backward_node(node, bname, [ograds[n_values - 1]] + outs), 0, 0)]
    return gradient


register_la("det", _det, arguments=("A",), outputs=_names(3), num_visible_outputs=1,
            infer_shape=_det_shape(1), infer_type=float_type(3, int_outputs=(2,)), doc=__doc__,
            gradient=_det_grad("_backward_linalg_det", 1))
register(OpDef("_backward_linalg_det", _det_backward, arguments=("ograd", "det", "LU", "pivot"),
               infer_shape=pick(2), infer_type=pick(2)))
register_la("slogdet", _slogdet, arguments=("A",), outputs=_names(4),
            num_visible_outputs=2, infer_shape=_det_shape(2), doc=__doc__,
            infer_type=float_type(4, int_outputs=(3,)), gradient=_det_grad("_backward_linalg_slogdet", 2))
register(OpDef("_backward_linalg_slogdet", _det_backward,
               arguments=("ograd", "sign", "logabsdet", "LU", "pivot"), infer_shape=pick(3),
               infer_type=pick(3)))
