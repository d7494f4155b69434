"""Matrix products: ``dot`` and ``batch_dot``.

``dot(lhs, rhs)`` of N-d arrays contracts the last axis of ``lhs`` with the first axis of ``rhs``:
``lhs`` is seen as a matrix ``(prod(shape[:-1]), shape[-1])`` and ``rhs`` as
``(shape[0], prod(shape[1:]))``. ``transpose_a`` instead sees ``lhs`` as ``(shape[0], rest)`` and
transposes it (likewise ``transpose_b`` for ``rhs``). Two vectors give shape ``(1,)``.
``batch_dot`` multiplies 3-d stacks of matrices ``(B, M, K) x (B, K, N)``.

Gradients, with ``C = A B``: ``dA = dC B^T``, ``dB = A^T dC`` (in the matrix views above),
computed by ``_backward_dot`` / ``_backward_batch_dot``.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .registry import OpDef, Param, assign, register

_PARAMS = {"transpose_a": Param("bool", False), "transpose_b": Param("bool", False),
           "forward_stype": Param("any", None)}


def _prod(dims) -> int:
    return int(np.prod(dims, dtype=np.int64)) if len(dims) else 1


def _views(params, lshape, rshape) -> Tuple[Tuple[int, int], Tuple[int, int], Tuple[int, ...]]:
    """Matrix shapes (after transposes) of both operands and the output shape."""
    if params["transpose_a"]:
        a, out_l = (_prod(lshape[1:]), lshape[0]), tuple(lshape[1:])
    else:
        a, out_l = (_prod(lshape[:-1]), lshape[-1]), tuple(lshape[:-1])
    if params["transpose_b"]:
        b, out_r = (rshape[-1], _prod(rshape[:-1])), tuple(rshape[:-1])
    else:
        b, out_r = (rshape[0], _prod(rshape[1:])), tuple(rshape[1:])
    if a[1] != b[0]:
        raise MXNetError(f"dot: shapes {tuple(lshape)} and {tuple(rshape)} do not match "
                         f"(transpose_a={params['transpose_a']}, transpose_b={params['transpose_b']})")
    return a, b, (out_l + out_r) or (1,)


def _mat(x: np.ndarray, transpose: bool, first_axis_rows: bool) -> np.ndarray:
    """``x`` as a matrix: rows are its first axis (``first_axis_rows``) or all but its last."""
    m = x.reshape(x.shape[0], -1) if first_axis_rows else x.reshape(-1, x.shape[-1])
    return m.T if transpose else m


def _dot_shape(params, in_shapes):
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return list(in_shapes), [None]
    return list(in_shapes), [_views(params, lhs, rhs)[2]]


def _operands(params, lhs, rhs):
    ta, tb = params["transpose_a"], params["transpose_b"]
    return _mat(lhs, ta, first_axis_rows=ta), _mat(rhs, tb, first_axis_rows=not tb)


def _dot_kernel(octx, params, inputs, outputs, req):
    a, b = _operands(params, *inputs)
    out = outputs[0]
    if req[0] == "write" and out.flags.c_contiguous:
        np.dot(a, b, out=out.reshape(a.shape[0], b.shape[1]))
    else:
        assign(out, req[0], np.dot(a, b).reshape(out.shape))


def _dot_backward_kernel(octx, params, inputs, outputs, req):
    g, lhs, rhs = inputs
    a, b = _operands(params, lhs, rhs)
    gm = g.reshape(a.shape[0], b.shape[1])
    da, db = gm @ b.T, a.T @ gm        # gradients of the (possibly transposed) matrix views
    if params["transpose_a"]:
        da = da.T
    if params["transpose_b"]:
        db = db.T
    assign(outputs[0], req[0], da.reshape(lhs.shape))
    assign(outputs[1], req[1], db.reshape(rhs.shape))


def _grad(bname: str):
    def grad(node, ograds):
        n = make_node(bname, [ograds[0], *node.inputs], node.name + "_backward", params=node.params)
        return [NodeEntry(n, 0, 0), NodeEntry(n, 1, 0)]
    return grad


def _backward_shapes(params, in_shapes):
    return list(in_shapes), [in_shapes[1], in_shapes[2]]


def _backward_types(params, in_types):
    return list(in_types), [in_types[1], in_types[2]]


register(OpDef("dot", _dot_kernel, arguments=("lhs", "rhs"), params=_PARAMS, infer_shape=_dot_shape,
               gradient=_grad("_backward_dot"),
               doc="dot(lhs, rhs, transpose_a=False, transpose_b=False): matrix product of N-d arrays."))
register(OpDef("_backward_dot", _dot_backward_kernel, arguments=("ograd", "lhs", "rhs"), params=_PARAMS,
               outputs=("lhs_grad", "rhs_grad"), infer_shape=_backward_shapes, infer_type=_backward_types))


def _batch_shape(params, in_shapes):
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return list(in_shapes), [None]
    if len(lhs) != 3 or len(rhs) != 3:
        raise MXNetError(f"batch_dot: inputs must be 3-d, got {tuple(lhs)} and {tuple(rhs)}")
    m, k = (lhs[2], lhs[1]) if params["transpose_a"] else (lhs[1], lhs[2])
    k2, n = (rhs[2], rhs[1]) if params["transpose_b"] else (rhs[1], rhs[2])
    if not k or not k2:
        return list(in_shapes), [None]      # as MXNet: nothing until the inner sizes are known
    if (lhs[0] and rhs[0] and lhs[0] != rhs[0]) or k != k2:
        raise MXNetError(f"batch_dot: shapes {tuple(lhs)} and {tuple(rhs)} do not match "
                         f"(transpose_a={params['transpose_a']}, transpose_b={params['transpose_b']})")
    return list(in_shapes), [(lhs[0] or rhs[0], m, n)]


def _batch_operands(params, lhs, rhs):
    a = lhs.transpose(0, 2, 1) if params["transpose_a"] else lhs
    b = rhs.transpose(0, 2, 1) if params["transpose_b"] else rhs
    return a, b


def _batch_kernel(octx, params, inputs, outputs, req):
    a, b = _batch_operands(params, *inputs)
    if req[0] == "write":
        np.matmul(a, b, out=outputs[0])
    else:
        assign(outputs[0], req[0], np.matmul(a, b))


def _batch_backward_kernel(octx, params, inputs, outputs, req):
    g, lhs, rhs = inputs
    a, b = _batch_operands(params, lhs, rhs)
    da, db = np.matmul(g, b.transpose(0, 2, 1)), np.matmul(a.transpose(0, 2, 1), g)
    assign(outputs[0], req[0], da.transpose(0, 2, 1) if params["transpose_a"] else da)
    assign(outputs[1], req[1], db.transpose(0, 2, 1) if params["transpose_b"] else db)


register(OpDef("batch_dot", _batch_kernel, arguments=("lhs", "rhs"), params=_PARAMS,
               infer_shape=_batch_shape, gradient=_grad("_backward_batch_dot"),
               doc="batch_dot(lhs, rhs, transpose_a=False, transpose_b=False): (B,M,K) x (B,K,N)."))
register(OpDef("_backward_batch_dot", _batch_backward_kernel, arguments=("ograd", "lhs", "rhs"),
               params=_PARAMS, outputs=("lhs_grad", "rhs_grad"), infer_shape=_backward_shapes,
               infer_type=_backward_types))
