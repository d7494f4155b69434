# distutils: extra_compile_args = -ffp-contract=off
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The SGD updates in one pass over memory (twin: the numpy steps of ``mxref/ops/optimizer/sgd.py``).

An update is memory-bound: numpy's form makes six passes over the weight-sized arrays
(rescale, clip, decay, momentum, step, add) and a temporary, the loop here one. Each element is
computed with the same operations in the same order and precision as the twin (constants
rounded to the array's dtype first, no fused multiply-add), so both give the same bits.

Every function takes a flat range ``[lo, hi)`` and releases the GIL, so
``mxref/ops/parallel.py`` can run the halves of a large weight on two threads.
"""
from cython cimport floating


cdef inline floating _grad(floating g, floating rescale, floating clip, bint clipping) noexcept nogil:
    g = g * rescale
    if clipping:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    return g


def sgd_update(const floating[::1] w, const floating[::1] grad, floating[::1] dst, double lr,
               double wd, double rescale_grad, double clip_gradient, Py_ssize_t lo, Py_ssize_t hi):
    """``dst = (1 - lr*wd) * w - lr * clip(rescale_grad * grad)`` on ``[lo, hi)``."""
    cdef floating f_lr = <floating>lr, decay = <floating>(1.0 - lr * wd)
    cdef floating rescale = <floating>rescale_grad, clip = <floating>clip_gradient
    cdef bint clipping = clip_gradient >= 0
    cdef Py_ssize_t i
    cdef floating g
    with nogil:
        for i in range(lo, hi):
            g = _grad(grad[i], rescale, clip, clipping) * f_lr
            dst[i] = w[i] * decay - g


def sgd_mom_update(const floating[::1] w, const floating[::1] grad, floating[::1] mom,
                   floating[::1] dst, double lr, double momentum, double wd, double rescale_grad,
                   double clip_gradient, Py_ssize_t lo, Py_ssize_t hi):
    """``mom = momentum*mom - lr*wd*w - lr*clip(rescale_grad*grad); dst = w + mom`` on ``[lo, hi)``."""
    cdef floating f_lr = <floating>lr, f_mom = <floating>momentum, lr_wd = <floating>(lr * wd)
    cdef floating rescale = <floating>rescale_grad, clip = <floating>clip_gradient
    cdef bint clipping = clip_gradient >= 0
    cdef Py_ssize_t i
    cdef floating g, m
    with nogil:
        for i in range(lo, hi):
            g = _grad(grad[i], rescale, clip, clipping)
            m = mom[i] * f_mom
            m = m - lr_wd * w[i]
            m = m - g * f_lr
            mom[i] = m
            dst[i] = w[i] + m
