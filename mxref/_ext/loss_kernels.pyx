# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Softmax cross-entropy over the rows of a matrix in C: Gluon's fused loss operator
``_softmax_cross_entropy_pick`` (twin: the numpy code in ``mxref/ops/nn/softmax_cross_entropy_pick.py``).

A classifier's loss is a small matrix (batch x classes), where numpy's dozen calls per row-wise
softmax cost more than the arithmetic. One pass per row here: the maximum, the sum of
exponentials (accumulated in double), then the picked log-probability or the gradient. Labels
are class indices (int64: the caller converts float labels, truncating as ``pick`` does), clipped
into ``[0, classes)``.

The GIL is released only for large matrices (a language model's vocabulary): for a small one
the loop takes microseconds, less than getting the GIL back can cost while another thread runs
Python.
"""
from cython cimport floating
from libc.math cimport exp, expf, log
from libc.stdint cimport int64_t

cdef Py_ssize_t NOGIL_ELEMENTS = 1 << 16


cdef inline Py_ssize_t _clip(int64_t k, Py_ssize_t classes) noexcept nogil:
    if k < 0:
        return 0
    if k >= classes:
        return classes - 1
    return k


cdef inline floating _exp(floating v) noexcept nogil:
    # (float32 in float32, as numpy's exp does: expf is about twice as fast as exp)
    if floating is float:
        return expf(v)
    return exp(v)


cdef inline floating _row_max(const floating* row, Py_ssize_t c) noexcept nogil:
    cdef floating m = row[0]
    cdef Py_ssize_t j
    for j in range(1, c):
        if row[j] > m:
            m = row[j]
    return m


cdef void _forward(const floating[:, ::1] x, const int64_t[::1] label, floating[::1] out) noexcept nogil:
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], i, j
    cdef const floating* row
    cdef floating m
    cdef double s
    for i in range(n):
        row = &x[i, 0]
        m = _row_max(row, c)
        s = 0
        for j in range(c):
            s += _exp(row[j] - m)
        out[i] = <floating>(-(row[_clip(label[i], c)] - m - log(s)))


cdef void _backward(const floating[::1] g, const floating[:, ::1] x, const int64_t[::1] label,
                    floating[:, ::1] dx) noexcept nogil:
    cdef Py_ssize_t n = x.shape[0], c = x.shape[1], i, j
    cdef const floating* row
    cdef floating* drow
    cdef floating m, e
    cdef double s
    for i in range(n):
        row = &x[i, 0]
        drow = &dx[i, 0]
        m = _row_max(row, c)
        s = 0
        for j in range(c):
            e = _exp(row[j] - m)
            drow[j] = e
            s += e
        for j in range(c):
            drow[j] = <floating>(drow[j] / s)
        j = _clip(label[i], c)
        drow[j] -= 1
        for j in range(c):
            drow[j] *= g[i]


def softmax_ce_forward(const floating[:, ::1] x, const int64_t[::1] label, floating[::1] out):
    """``out[i] = -log_softmax(x[i])[label[i]]`` for every row ``i`` (``x`` has at least one column)."""
    if x.shape[0] * x.shape[1] >= NOGIL_ELEMENTS:
        with nogil:
            _forward(x, label, out)
    else:
        _forward(x, label, out)


def softmax_ce_backward(const floating[::1] g, const floating[:, ::1] x, const int64_t[::1] label,
                        floating[:, ::1] dx):
    """``dx[i] = g[i] * (softmax(x[i]) - onehot(label[i]))`` for every row ``i``."""
    if x.shape[0] * x.shape[1] >= NOGIL_ELEMENTS:
        with nogil:
            _backward(g, x, label, dx)
    else:
        _backward(g, x, label, dx)
