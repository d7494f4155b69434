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


def unique_columns(const int64_t[::1] indices, int64_t ncols, int64_t[::1] cols, int64_t[::1] slot,
                   int64_t[::1] order, int64_t[::1] scratch):
    """The sorted distinct values of ``indices`` (into ``cols``; returns how many) and the place
    of each entry's value among them (into ``slot``): ``np.unique(..., return_inverse=True)``.

    A stable LSD radix sort of the entries by value, 11 bits per pass (two passes for a million
    columns), then one walk in sorted order: O(entries) work on arrays the size of the batch, so
    the number of columns costs nothing but passes. ``order`` and ``scratch`` are workspaces of
    ``len(indices)`` entries.
    """
    cdef Py_ssize_t n = indices.shape[0], t, e, k = 0
    cdef int64_t counts[2048]
    cdef int64_t shift = 0, total, c, prev
    cdef int64_t[::1] src = order, dst = scratch, swap
    if n == 0:
        return 0
    with nogil:
        for t in range(n):
            src[t] = t
        while shift == 0 or (ncols - 1) >> shift > 0:
            for c in range(2048):
                counts[c] = 0
            for t in range(n):
                counts[(indices[src[t]] >> shift) & 2047] += 1
            total = 0
            for c in range(2048):
                total, counts[c] = total + counts[c], total
            for t in range(n):
                e = src[t]
                c = (indices[e] >> shift) & 2047
                dst[counts[c]] = e
                counts[c] += 1
            swap = src
            src = dst
            dst = swap
            shift += 11
            if shift >= 63:
                break
        prev = -1
        for t in range(n):
            e = src[t]
            if indices[e] != prev:
                prev = indices[e]
                cols[k] = prev
                k += 1
            slot[e] = k - 1
    return k


def sgd_rows(floating[:, ::1] w, const floating[:, ::1] grad, const int64_t[::1] rows, double lr,
             double wd, double rescale_grad, double clip_gradient):
    """``sgd_update`` on the rows ``rows`` of ``w`` only, in place (``grad[i]`` is row ``rows[i]``'s
    gradient): the operations of ``optimizer_kernels.sgd_update``, in its order."""
    cdef floating f_lr = <floating>lr, decay = <floating>(1.0 - lr * wd)
    cdef floating rescale = <floating>rescale_grad, clip = <floating>clip_gradient
    cdef bint clipping = clip_gradient >= 0
    cdef Py_ssize_t i, j, n = w.shape[1]
    cdef int64_t r
    cdef floating g
    with nogil:
        for i in range(rows.shape[0]):
            r = rows[i]
            for j in range(n):
                g = grad[i, j] * rescale
                if clipping:
                    if g > clip:
                        g = clip
                    elif g < -clip:
                        g = -clip
                g = g * f_lr
                w[r, j] = w[r, j] * decay - g


def csrt_dns_scatter_slots(const floating[::1] data, const int64_t[::1] slot, const int64_t[::1] indptr,
                           const floating[:, ::1] b, floating[:, ::1] rows, Py_ssize_t lo, Py_ssize_t hi):
    """``csrt_dns_scatter`` over every entry, writing only result rows ``lo <= slot < hi``: threads
    given disjoint slot ranges never write the same row, and each row still sums in entry order."""
    cdef Py_ssize_t i, e, j, n = b.shape[1], m = indptr.shape[0] - 1
    cdef int64_t s
    cdef floating v, p
    with nogil:
        for i in range(m):
            for e in range(indptr[i], indptr[i + 1]):
                s = slot[e]
                if s < lo or s >= hi:
                    continue
                v = data[e]
                for j in range(n):
                    p = v * b[i, j]
                    rows[s, j] = rows[s, j] + p
