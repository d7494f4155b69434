# distutils: extra_compile_args = -ffp-contract=off
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Loops of the sparse ``dot`` (twin: the numpy kernels of ``mxref/ops/sparse/dot.py``).

Each stored entry ``(i, k, v)`` of a csr matrix adds ``v * b[k]`` to row ``i`` of the result
(csr·dense) or ``v * b[i]`` to the result row of column ``k`` (csrᵀ·dense). The additions run in
the order of the entries, starting from zero, with the product rounded to the dtype before it is
added (no fused multiply-add). numpy's ``add.reduceat`` in the twin may group the same additions
differently, so the two agree to rounding (a few ulps), not bit for bit; the tests hold them to
that. The loops release the GIL, so ``mxref/ops/parallel.py`` can give ranges of rows to two
threads.
"""
from cython cimport floating
from libc.stdint cimport int64_t


def csr_dns_rows(const floating[::1] data, const int64_t[::1] indices, const int64_t[::1] indptr,
                 const floating[:, ::1] b, floating[:, ::1] out, Py_ssize_t lo, Py_ssize_t hi):
    """``out[i] = sum_e data[e] * b[indices[e]]`` over the entries ``e`` of rows ``lo <= i < hi``
    (``out`` zeroed by the caller)."""
    cdef Py_ssize_t i, e, j, n = b.shape[1]
    cdef int64_t k
    cdef floating v, p
    with nogil:
        for i in range(lo, hi):
            for e in range(indptr[i], indptr[i + 1]):
                v = data[e]
                k = indices[e]
                for j in range(n):
                    p = v * b[k, j]
                    out[i, j] = out[i, j] + p


def csrt_dns_scatter(const floating[::1] data, const int64_t[::1] slot, const int64_t[::1] indptr,
                     const floating[:, ::1] b, floating[:, ::1] rows, Py_ssize_t lo, Py_ssize_t hi):
    """``rows[slot[e]] += data[e] * b[i]`` for the entries ``e`` of rows ``lo <= i < hi`` (``slot``:
    the result row of each entry's column), in entry order."""
    cdef Py_ssize_t i, e, j, n = b.shape[1]
    cdef int64_t s
    cdef floating v, p
    with nogil:
        for i in range(lo, hi):
            for e in range(indptr[i], indptr[i + 1]):
                v = data[e]
                s = slot[e]
                for j in range(n):
                    p = v * b[i, j]
                    rows[s, j] = rows[s, j] + p
