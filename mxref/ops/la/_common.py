"""Rules the linear-algebra cards share: names, float-only types, square checks, triangles, batched
matmul and batched LAPACK calls split over the operator threads, and backward-node builders."""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from ...base import MXNetError
from ...graph import NodeEntry
from ..nn._util import backward_node
from ..parallel import MIN_GEMM_PER_THREAD, MIN_WORK_PER_THREAD, SPLIT_GEMMS, parallel_for, parallel_matmul
from ..registry import OpDef, register

Shape = Optional[Tuple[int, ...]]
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def public(name: str) -> str:
    """``gemm`` -> ``linalg.gemm``: how errors name an operator (as the user called it)."""
    return "linalg." + name


def register_la(name: str, fcompute, *, alias: bool = True, **kw) -> OpDef:
    """Register ``_linalg_<name>`` (and MXNet's top-level alias ``linalg_<name>``)."""
    return register(OpDef("_linalg_" + name, fcompute, aliases=("linalg_" + name,) if alias else (), **kw))


def float_type(num_outputs: int = 1, int_outputs: Sequence[int] = ()):
    """Type rule: one float32/float64 dtype for every input and output (``int_outputs``: int32)."""
    def infer_type(params, in_types):
        dt = next((t for t in in_types if t is not None), None)
        for t in in_types:
            if t is not None and t != dt:
                raise MXNetError(f"linear algebra operator: inputs have mixed dtypes "
                                 f"{[getattr(x, 'name', x) for x in in_types]}")
        if dt is not None and np.dtype(dt) not in FLOATS:
            raise MXNetError(f"linear algebra operator: got dtype {np.dtype(dt).name}; this operation "
                             "only supports 32-bit and 64-bit floating point")
        outs = [np.dtype(np.int32) if i in int_outputs else dt for i in range(num_outputs)]
        return [dt] * len(in_types), outs
    return infer_type


def need_matrices(op: str, what: str, shape: Shape, square: bool = False) -> None:
    """``shape`` is a (batch of) matrices: at least 2-d, and square where asked."""
    if shape is None:
        return
    if len(shape) < 2:
        raise MXNetError(f"{public(op)}: input '{what}' must have at least 2 dimensions, got shape "
                         f"{tuple(shape)}")
    if square and shape[-1] != shape[-2]:
        raise MXNetError(f"{public(op)}: input '{what}' must be a tensor of square matrices, got shape "
                         f"{tuple(shape)}")


def same_batch(op: str, names: Sequence[str], shapes: Sequence[Shape], skip=(-2, -1)) -> None:
    """Every shape has the same ndim and the same leading (batch) dimensions."""
    a, an = shapes[0], names[0]
    for b, bn in zip(shapes[1:], names[1:]):
        keep = [i for i in range(len(a)) if i - len(a) not in skip and i not in skip]
        if len(a) != len(b) or any(a[i] != b[i] for i in keep):
            raise MXNetError(f"{public(op)}: inputs '{an}' {tuple(a)} and '{bn}' {tuple(b)} must have the "
                             "same number of dimensions and the same batch dimensions")


def square_shape(op: str):
    """Shape rule of ``A (..., n, n) -> out (..., n, n)``."""
    def infer_shape(params, in_shapes):
        need_matrices(op, "A", in_shapes[0], square=True)
        return list(in_shapes), [in_shapes[0]]
    return infer_shape


def pick(*indices):
    """Shape (and type) rule of a backward op: its outputs look like the inputs at ``indices``."""
    def infer(params, in_items):
        return list(in_items), [in_items[i] for i in indices]
    return infer


# -- matrices -----------------------------------------------------------------------------------

def T(x: np.ndarray) -> np.ndarray:
    """Transpose of every matrix in the batch (a view)."""
    return np.swapaxes(x, -1, -2)


def tri(x: np.ndarray, lower: bool, k: int = 0) -> np.ndarray:
    """The lower (or upper) triangle of every matrix, the rest zero (what BLAS reads of ``x``)."""
    return np.tril(x, k) if lower else np.triu(x, -k)


def sym_from(x: np.ndarray, lower: bool) -> np.ndarray:
    """The symmetric matrix whose triangle (lower or upper, with the diagonal) is ``x``'s: MXNet's
    ``copyLTU`` / ``copyUTL``."""
    t = tri(x, lower)
    return t + T(tri(x, lower, -1))


def eye_like(x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape)


def tri_inv(a: np.ndarray, lower: bool) -> np.ndarray:
    """Inverse of the triangle of every matrix (``np.linalg.solve`` on the triangular matrix)."""
    return batched(lambda t: np.linalg.solve(t, eye_like(t)), tri(a, lower))


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray = None) -> np.ndarray:
    """``a @ b`` over leading batch axes: one big GEMM split by rows, a batch split by matrices,
    over the operator threads (BLAS runs single-threaded beside them, see ``ops/blas.py``)."""
    shape = a.shape[:-1] + b.shape[-1:]
    if out is None or out.shape != shape or not out.flags.c_contiguous:
        out = np.empty(shape, np.result_type(a, b))
    if a.ndim == 2:
        return parallel_matmul(a, b, out)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a3, b3, o3 = a.reshape(-1, m, k), b.reshape(-1, k, n), out.reshape(-1, m, n)
    if len(o3) == 1:
        parallel_matmul(a3[0], b3[0], o3[0])
    elif not SPLIT_GEMMS:
        np.matmul(a3, b3, out=o3)
    else:
        parallel_for(len(o3), lambda lo, hi: np.matmul(a3[lo:hi], b3[lo:hi], out=o3[lo:hi]),
                     work_per_item=max(1, m * n * k * MIN_WORK_PER_THREAD // MIN_GEMM_PER_THREAD))
    return out


def batched(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, work: int = None) -> np.ndarray:
    """``fn`` (a stacked numpy.linalg call, which releases the GIL) on the batch of matrices ``x``,
    the batch split over the operator threads; one output array shaped like ``fn(x)``."""
    n = x.shape[-1]
    flat = x.reshape(-1, *x.shape[-2:])
    if not SPLIT_GEMMS or len(flat) < 2:
        return fn(x)
    first = fn(flat[:1])
    out = np.empty((len(flat),) + first.shape[1:], first.dtype)
    out[:1] = first

    def part(lo, hi):
        out[lo:hi] = fn(flat[lo:hi])
    parallel_for(len(flat) - 1, lambda lo, hi: part(lo + 1, hi + 1),
                 work_per_item=work or max(1, n ** 3 * MIN_WORK_PER_THREAD // MIN_GEMM_PER_THREAD))
    return out.reshape(x.shape[:-2] + first.shape[1:])


def lapack(op: str, fn: Callable[[], np.ndarray], why: str) -> np.ndarray:
    """Run a numpy.linalg call; its ``LinAlgError`` becomes MXNet's error naming the operator."""
    try:
        return fn()
    except np.linalg.LinAlgError as exc:
        raise MXNetError(f"{public(op)}: {why} ({exc})") from None


# -- gradients ----------------------------------------------------------------------------------

def grad_use(bname: str, use_in: bool = False, use_out: bool = False, n_in: int = 1):
    """MXNet's ``ElemwiseGradUseIn/Out/InOut``: one ``bname`` node reading the head gradients, then
    the forward inputs and/or outputs; its outputs are the ``n_in`` input gradients."""
    def gradient(node, ograds):
        ins = list(ograds)
        if use_in:
            ins += list(node.inputs)
        if use_out:
            ins += [NodeEntry(node, i, 0) for i in range(node.num_outputs())]
        n = backward_node(node, bname, ins)
        return [NodeEntry(n, i, 0) for i in range(n_in)]
    return gradient
