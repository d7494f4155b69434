# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""BatchNorm's loops in C over a channel range (twin: ``mxref/ops/nn/batch_norm.py``'s numpy code).

The data is viewed as ``(N, C, S)`` (S: the product of the axes after the channel axis). Each
function handles the channels ``c0 <= c < c1`` and releases the GIL, so ``parallel_for`` can give
channel ranges to the operator threads. The per-channel sums run in double precision: one pass
over the data for the sums, one for the output, where numpy's twin makes a temporary per step.
"""
from cython cimport floating
from libc.math cimport sqrt


def batch_norm_forward(const floating[:, :, ::1] x, const floating[::1] scale_in,
                       const floating[::1] beta, floating[::1] mean, floating[::1] var,
                       floating[::1] invstd, floating[:, :, ::1] y, int batch_stats, int use_gamma,
                       double eps, int c0, int c1):
    """``y = (x - mean) * invstd * gamma + beta`` per channel. With ``batch_stats`` the mean and
    biased variance are computed into ``mean``/``var``; else ``mean``/``var`` are read (the moving
    statistics). ``invstd`` receives ``1 / sqrt(var + eps)``; gamma is ``scale_in`` if
    ``use_gamma``, else 1."""
    cdef Py_ssize_t N = x.shape[0], S = x.shape[2], n, c, i
    cdef double s, d, mu, inv, a, b, M = <double> (N * S)
    cdef const floating* src
    cdef floating* dst
    if c1 <= c0:
        return
    with nogil:
        for c in range(c0, c1):
            if batch_stats:
                s = 0
                for n in range(N):
                    src = &x[n, c, 0]
                    for i in range(S):
                        s += src[i]
                mu = s / M
                s = 0
                for n in range(N):
                    src = &x[n, c, 0]
                    for i in range(S):
                        d = src[i] - mu
                        s += d * d
                mean[c] = <floating> mu
                var[c] = <floating> (s / M)
            inv = 1.0 / sqrt(<double> var[c] + eps)
            invstd[c] = <floating> inv
            # y = x * a + b, with a = gamma * invstd and b = beta - mean * a.
            a = inv * (scale_in[c] if use_gamma else 1.0)
            b = beta[c] - <double> mean[c] * a
            for n in range(N):
                src = &x[n, c, 0]
                dst = &y[n, c, 0]
                for i in range(S):
                    dst[i] = <floating> (src[i] * a + b)


def batch_norm_backward(const floating[:, :, ::1] g, const floating[:, :, ::1] x,
                        const floating[::1] gamma, const floating[::1] mean,
                        const floating[::1] invstd, floating[:, :, ::1] dx, floating[::1] dgamma,
                        floating[::1] dbeta, int batch_stats, int use_gamma, int want_dx,
                        int c0, int c1):
    """``dbeta = sum g``, ``dgamma = sum g * xhat``, and ``dx`` (if ``want_dx``):
    ``gamma * invstd / M * (M g - sum g - xhat * sum g xhat)`` with batch statistics, else
    ``gamma * invstd * g``."""
    cdef Py_ssize_t N = x.shape[0], S = x.shape[2], n, c, i
    cdef double sg, sgx, mu, inv, gam, a, b, k, M = <double> (N * S)
    cdef const floating* gp
    cdef const floating* src
    cdef floating* dst
    if c1 <= c0:
        return
    with nogil:
        for c in range(c0, c1):
            mu, inv = mean[c], invstd[c]
            sg = 0
            sgx = 0
            for n in range(N):
                gp = &g[n, c, 0]
                src = &x[n, c, 0]
                for i in range(S):
                    sg += gp[i]
                    sgx += gp[i] * (src[i] - mu)
            sgx *= inv
            dbeta[c] = <floating> sg
            dgamma[c] = <floating> sgx
            if not want_dx:
                continue
            gam = gamma[c] if use_gamma else 1.0
            # dx = g * a + (x - mu) * k + b, expanded from the formula above.
            a = gam * inv
            if batch_stats:
                k = -a * inv * sgx / M
                b = -a * sg / M
            else:
                k = 0
                b = 0
            for n in range(N):
                gp = &g[n, c, 0]
                src = &x[n, c, 0]
                dst = &dx[n, c, 0]
                for i in range(S):
                    dst[i] = <floating> (gp[i] * a + (src[i] - mu) * k + b)
