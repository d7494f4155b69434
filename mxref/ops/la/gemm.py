"""``linalg.gemm`` and ``linalg.gemm2``: batched matrix products with transposes, a scale and an
accumulator.

    gemm(A, B, C)   out = alpha * op(A) @ op(B) + beta * C       op(X) = X, or X^T if transpose_x
    gemm2(A, B)     out = alpha * op(A) @ op(B)

A matrix's rows lie on ``axis`` (default -2) and its columns on the last axis; every other axis
is a batch axis, the same in all inputs. A non-default ``axis`` is ``swapaxes(axis, -2)`` before
and after the product. Gradients (MXNet's ``gemm_backward``), with G the head gradient:

    d op(A) = alpha * G @ op(B)^T      d op(B) = alpha * op(A)^T @ G      dC = beta * G

The products run through ``_common.matmul`` (one large GEMM split by rows, a batch split by
matrices, over the operator threads).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._common import T, float_type, grad_use, matmul, need_matrices, pick, public, register_la

PARAMS2 = {"transpose_a": Param("bool", False, "Multiply with transposed of first input (A)."),
           "transpose_b": Param("bool", False, "Multiply with transposed of second input (B)."),
           "alpha": Param("float", 1.0, "Scalar factor multiplied with A*B."),
           "axis": Param("int", -2, "Axis corresponding to the matrix rows.")}
PARAMS = dict(list(PARAMS2.items())[:3] + [("beta", Param("float", 1.0, "Scalar factor multiplied with C.")),
                                           ("axis", PARAMS2["axis"])])


def _shape(op: str):
    def infer_shape(p, in_shapes):
        a, b = in_shapes[0], in_shapes[1]
        if a is None or b is None:              # as in MXNet: no inference from the output
            return list(in_shapes), [None]
        need_matrices(op, "A", a)
        need_matrices(op, "B", b)
        nd = len(a)
        ax = p["axis"] + nd if p["axis"] < 0 else p["axis"]
        if len(b) != nd or not 0 <= ax < nd - 1:
            raise MXNetError(f"{public(op)}: inputs A {tuple(a)} and B {tuple(b)} need the same number "
                             f"of dimensions and a row axis before the last (axis={p['axis']})")
        if any(a[i] != b[i] for i in range(nd - 1) if i != ax):
            raise MXNetError(f"{public(op)}: shapes of A {tuple(a)} and B {tuple(b)} must be the same "
                             "except on the row/column axes")
        ka, kb = (a[ax] if p["transpose_a"] else a[-1]), (b[-1] if p["transpose_b"] else b[ax])
        if ka != kb:
            raise MXNetError(f"{public(op)}: incompatible matrix dimensions for multiplication: A "
                             f"{tuple(a)} (transpose_a={p['transpose_a']}) and B {tuple(b)} "
                             f"(transpose_b={p['transpose_b']})")
        out = list(a)
        out[ax] = a[-1] if p["transpose_a"] else a[ax]
        out[-1] = b[ax] if p["transpose_b"] else b[-1]
        out = tuple(out)
        ins = list(in_shapes)
        if len(ins) == 3:
            if ins[2] is not None and tuple(ins[2]) != out:
                raise MXNetError(f"{public(op)}: input C has shape {tuple(ins[2])}, expected {out}")
            ins[2] = out
        return ins, [out]
    return infer_shape


def _rows(p, x: np.ndarray) -> np.ndarray:
    """``x`` with its row axis moved to -2 (a view; its own inverse)."""
    ax = p["axis"] % x.ndim
    return x if ax == x.ndim - 2 else np.swapaxes(x, ax, -2)


def _operands(p, a, b):
    a, b = _rows(p, a), _rows(p, b)
    return (T(a) if p["transpose_a"] else a), (T(b) if p["transpose_b"] else b)


def _gemm(octx, p, inputs, outputs, req):
    opa, opb = _operands(p, inputs[0], inputs[1])
    out = _rows(p, outputs[0])
    beta = p.get("beta", 0.0)
    into = req[0] in ("write", "inplace") and len(inputs) == 2 and out.flags.c_contiguous
    r = matmul(opa, opb, out if into else None)         # C may share out's memory: read it below
    if p["alpha"] != 1.0:
        r *= r.dtype.type(p["alpha"])
    if len(inputs) == 3 and beta != 0.0:
        r += r.dtype.type(beta) * _rows(p, inputs[2])
    if r is not out:
        assign(out, req[0], r)


def _backward(octx, p, inputs, outputs, req):
    g, (opa, opb) = _rows(p, inputs[0]), _operands(p, inputs[1], inputs[2])
    alpha = g.dtype.type(p["alpha"])
    if req[0] != "null":
        da = matmul(g, T(opb))
        da *= alpha
        assign(_rows(p, outputs[0]), req[0], T(da) if p["transpose_a"] else da)
    if req[1] != "null":
        db = matmul(T(opa), g)
        db *= alpha
        assign(_rows(p, outputs[1]), req[1], T(db) if p["transpose_b"] else db)
    if len(outputs) == 3:
        assign(outputs[2], req[2], g.dtype.type(p["beta"]) * inputs[0])


register_la("gemm", _gemm, arguments=("A", "B", "C"), params=PARAMS, infer_shape=_shape("gemm"),
            infer_type=float_type(), inplace=[(2, 0)], doc=__doc__,
            gradient=grad_use("_backward_linalg_gemm", use_in=True, n_in=3))
register(OpDef("_backward_linalg_gemm", _backward, arguments=("ograd", "A", "B", "C"),
               outputs=("A_grad", "B_grad", "C_grad"), params=PARAMS, ignore_inputs=(3,),
               infer_shape=pick(1, 2, 3), infer_type=pick(1, 2, 3)))
register_la("gemm2", _gemm, arguments=("A", "B"), params=PARAMS2, infer_shape=_shape("gemm2"),
            infer_type=float_type(), doc=__doc__,
            gradient=grad_use("_backward_linalg_gemm2", use_in=True, n_in=2))
register(OpDef("_backward_linalg_gemm2", _backward, arguments=("ograd", "A", "B"),
               outputs=("A_grad", "B_grad"), params=PARAMS2, infer_shape=pick(1, 2),
               infer_type=pick(1, 2)))
