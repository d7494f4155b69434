# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""BatchNorm's loops in C over a channel range (twin: ``mxref/ops/nn/batch_norm.py``'s numpy code).

The data is viewed as ``(N, C, S)`` (S: the product of the axes after the channel axis). Each
function handles the channels ``c0 <= c < c1`` and releases the GIL, so ``parallel_for`` can give
channel ranges to the operator threads. The per-channel sums run in double precision (four accumulators each): one pass
over the data for the sums, one for the output, where numpy's twin makes a temporary per step.
"""
from cython cimport floating
from libc.math cimport sqrt


# Each sum runs on four independent double accumulators (lanes ``i % 4`` of every row, added in one
# fixed order at the end): one accumulator would wait on each add's latency (~4 cycles an element).

cdef inline double _sum(const floating* base, Py_ssize_t N, Py_ssize_t step, Py_ssize_t S,
                        double shift) noexcept nogil:
    """``sum_{n, i} (base[n * step + i] - shift)`` over ``N`` rows of ``S``."""
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0
    cdef Py_ssize_t n, i
    cdef const floating* p
    for n in range(N):
        p = base + n * step
        i = 0
        while i + 4 <= S:
            s0 += p[i] - shift
            s1 += p[i + 1] - shift
            s2 += p[i + 2] - shift
            s3 += p[i + 3] - shift
            i += 4
        while i < S:
            s0 += p[i] - shift
            i += 1
    return (s0 + s1) + (s2 + s3)


cdef inline double _sum_sq(const floating* base, Py_ssize_t N, Py_ssize_t step, Py_ssize_t S,
                           double mu) noexcept nogil:
    """``sum_{n, i} (base[n * step + i] - mu)**2`` over ``N`` rows of ``S``."""
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0, d0, d1, d2, d3
    cdef Py_ssize_t n, i
    cdef const floating* p
    for n in range(N):
        p = base + n * step
        i = 0
        while i + 4 <= S:
            d0 = p[i] - mu
            d1 = p[i + 1] - mu
            d2 = p[i + 2] - mu
            d3 = p[i + 3] - mu
            s0 += d0 * d0
            s1 += d1 * d1
            s2 += d2 * d2
            s3 += d3 * d3
            i += 4
        while i < S:
            d0 = p[i] - mu
            s0 += d0 * d0
            i += 1
    return (s0 + s1) + (s2 + s3)


cdef inline void _sum_g_gx(const floating* gb, const floating* xb, Py_ssize_t N, Py_ssize_t step,
                           Py_ssize_t S, double mu, double* sg, double* sgx) noexcept nogil:
    """``sg = sum g`` and ``sgx = sum g * (x - mu)`` over ``N`` rows of ``S``."""
    cdef double a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0
    cdef Py_ssize_t n, i
    cdef const floating* g
    cdef const floating* x
    for n in range(N):
        g = gb + n * step
        x = xb + n * step
        i = 0
        while i + 4 <= S:
            a0 += g[i]
            a1 += g[i + 1]
            a2 += g[i + 2]
            a3 += g[i + 3]
            b0 += g[i] * (x[i] - mu)
            b1 += g[i + 1] * (x[i + 1] - mu)
            b2 += g[i + 2] * (x[i + 2] - mu)
            b3 += g[i + 3] * (x[i + 3] - mu)
            i += 4
        while i < S:
            a0 += g[i]
            b0 += g[i] * (x[i] - mu)
            i += 1
    sg[0] = (a0 + a1) + (a2 + a3)
    sgx[0] = (b0 + b1) + (b2 + b3)


def batch_norm_forward(const floating[:, :, ::1] x, const floating[::1] scale_in,
                       const floating[::1] beta, floating[::1] mean, floating[::1] var,
                       floating[::1] invstd, floating[:, :, ::1] y, int batch_stats, int use_gamma,
                       double eps, int c0, int c1):
    """``y = (x - mean) * invstd * gamma + beta`` per channel. With ``batch_stats`` the mean and
    biased variance are computed into ``mean``/``var``; else ``mean``/``var`` are read (the moving
    statistics). ``invstd`` receives ``1 / sqrt(var + eps)``; gamma is ``scale_in`` if
    ``use_gamma``, else 1."""
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], S = x.shape[2], n, c, i
    cdef double s, mu, inv, a, b, M = <double> (N * S)
    cdef floating fa, fb
    cdef const floating* src
    cdef floating* dst
    if c1 <= c0:
        return
    with nogil:
        for c in range(c0, c1):
            if batch_stats:
                mu = _sum(&x[0, c, 0], N, C * S, S, 0.0) / M
                s = _sum_sq(&x[0, c, 0], N, C * S, S, mu)
                mean[c] = <floating> mu
                var[c] = <floating> (s / M)
            inv = 1.0 / sqrt(<double> var[c] + eps)
            invstd[c] = <floating> inv
            # y = x * a + b, with a = gamma * invstd and b = beta - mean * a.
            a = inv * (scale_in[c] if use_gamma else 1.0)
            b = beta[c] - <double> mean[c] * a
            # In the data's precision (float32: four lanes a vector, two for double).
            fa, fb = <floating> a, <floating> b
            for n in range(N):
                src = &x[n, c, 0]
                dst = &y[n, c, 0]
                for i in range(S):
                    dst[i] = src[i] * fa + fb


def batch_norm_backward(const floating[:, :, ::1] g, const floating[:, :, ::1] x,
                        const floating[::1] gamma, const floating[::1] mean,
                        const floating[::1] invstd, floating[:, :, ::1] dx, floating[::1] dgamma,
                        floating[::1] dbeta, int batch_stats, int use_gamma, int want_dx,
                        int c0, int c1):
    """``dbeta = sum g``, ``dgamma = sum g * xhat``, and ``dx`` (if ``want_dx``):
    ``gamma * invstd / M * (M g - sum g - xhat * sum g xhat)`` with batch statistics, else
    ``gamma * invstd * g``."""
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], S = x.shape[2], n, c, i
    cdef double sg, sgx, mu, inv, gam, a, b, k, M = <double> (N * S)
    cdef floating fa, fk, fb
    cdef const floating* gp
    cdef const floating* src
    cdef floating* dst
    if c1 <= c0:
        return
    with nogil:
        for c in range(c0, c1):
            mu, inv = mean[c], invstd[c]
            _sum_g_gx(&g[0, c, 0], &x[0, c, 0], N, C * S, S, mu, &sg, &sgx)
            sgx *= inv
            dbeta[c] = <floating> sg
            dgamma[c] = <floating> sgx
            if not want_dx:
                continue
            gam = gamma[c] if use_gamma else 1.0
            # dx = g * a + (x - mu) * k + b = g * a + x * k + (b - mu * k), expanded from the formula above.
            a = gam * inv
            if batch_stats:
                k = -a * inv * sgx / M
                b = -a * sg / M
            else:
                k = 0
                b = 0
            fa, fk, fb = <floating> a, <floating> k, <floating> (b - mu * k)
            for n in range(N):
                gp = &g[n, c, 0]
                src = &x[n, c, 0]
                dst = &dx[n, c, 0]
                for i in range(S):
                    dst[i] = gp[i] * fa + src[i] * fk + fb
