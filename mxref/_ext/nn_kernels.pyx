# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""2-D window kernels in C for Convolution and max Pooling (twin: ``mxref/ops/nn/im2col.py`` and
``pooling.py``'s numpy loops).

Each function handles the samples ``n0 <= n < n1`` and releases the GIL for its loops, so
``mxref/ops/parallel.py`` can run two halves of a batch on two threads at once (numpy's
strided copies of the twin do not scale that way: their innermost runs are a few elements).
Padding is never materialised: a position outside the input reads 0 (convolution) or -inf (max
pooling) and its gradient is dropped, exactly as the numpy path's padded buffers behave.
"""
from cython cimport floating
from libc.math cimport INFINITY, NAN
from libc.stdlib cimport free, malloc


cdef inline void _valid_range(Py_ssize_t size, Py_ssize_t out, Py_ssize_t stride, Py_ssize_t offset,
                              Py_ssize_t* lo, Py_ssize_t* hi) noexcept nogil:
    """``[lo, hi)``: the output positions ``o`` with ``0 <= o * stride + offset < size``."""
    cdef Py_ssize_t first = 0, last
    if offset < 0:
        first = (-offset + stride - 1) // stride
    last = (size - 1 - offset) // stride + 1 if size - 1 - offset >= 0 else 0
    lo[0] = min(first, out)
    hi[0] = max(lo[0], min(last, out))


def im2col_2d(const floating[:, :, :, ::1] x, floating[:, ::1] cols, int kh, int kw, int sh, int sw,
              int dh, int dw, int ph, int pw, int oh, int ow, int n0, int n1):
    """``cols[(c, ki, kj), (n, oy, ox)] = x[n, c, oy*sh - ph + ki*dh, ox*sw - pw + kj*dw]`` (0 outside)."""
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3], ncols = cols.shape[1]
    cdef Py_ssize_t n, c, ki, kj, oy, ox, iy, off, lo, hi
    cdef const floating* src
    cdef floating* dst
    if n1 <= n0:
        return
    with nogil:
        # Row by row, so each row's part for samples [n0, n1) is written as one sequential run
        # (rows are N * out elements apart: going sample-major would hop rows at every step).
        for c in range(C):
            for ki in range(kh):
                for kj in range(kw):
                    off = kj * dw - pw
                    # The columns whose window reaches past the left/right edge read zeros.
                    _valid_range(W, ow, sw, off, &lo, &hi)
                    dst = &cols[(c * kh + ki) * kw + kj, n0 * oh * ow]
                    for n in range(n0, n1):
                        for oy in range(oh):
                            iy = oy * sh - ph + ki * dh
                            if iy < 0 or iy >= H:
                                for ox in range(ow):
                                    dst[ox] = 0
                            else:
                                src = &x[n, c, iy, 0]
                                for ox in range(lo):
                                    dst[ox] = 0
                                for ox in range(lo, hi):
                                    dst[ox] = src[ox * sw + off]
                                for ox in range(hi, ow):
                                    dst[ox] = 0
                            dst += ow


def col2im_2d(const floating[:, :, ::1] dcols, floating[:, :, :, ::1] dx, int kh, int kw, int sh,
              int sw, int dh, int dw, int ph, int pw, int oh, int ow, int n0, int n1):
    """Adjoint of ``im2col_2d`` for kernel-major columns ``dcols[(ki, kj), c, (n, oy, ox)]``.

    ``dx[n]`` is overwritten (zeroed first), so the halves of a batch never touch the same memory.
    Each element sums its contributions in kernel-offset order, as the numpy twin does, so both
    give the same bits.
    """
    cdef Py_ssize_t C = dx.shape[1], H = dx.shape[2], W = dx.shape[3]
    cdef Py_ssize_t n, c, ki, kj, oy, ox, iy, off, lo, hi, i
    cdef const floating* src
    cdef floating* dst
    if n1 <= n0:
        return
    with nogil:
        for n in range(n0, n1):
            dst = &dx[n, 0, 0, 0]
            for i in range(C * H * W):
                dst[i] = 0
        # Column rows in order, each read as one sequential run over samples [n0, n1).
        for c in range(C):
            for ki in range(kh):
                for kj in range(kw):
                    off = kj * dw - pw
                    _valid_range(W, ow, sw, off, &lo, &hi)
                    src = &dcols[ki * kw + kj, c, n0 * oh * ow]
                    for n in range(n0, n1):
                        for oy in range(oh):
                            iy = oy * sh - ph + ki * dh
                            if 0 <= iy < H:
                                dst = &dx[n, c, iy, 0]
                                for ox in range(lo, hi):
                                    dst[ox * sw + off] += src[ox]
                            src += ow


def max_pool_2d(const floating[:, :, :, ::1] x, floating[:, :, :, ::1] y, int kh, int kw, int sh,
                int sw, int ph, int pw, int n0, int n1):
    """``y[n, c, oy, ox]`` = the window's maximum; positions outside the input count as -inf."""
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3], oh = y.shape[2], ow = y.shape[3]
    cdef Py_ssize_t plane, oy, ox, iy, ix, ki, kj, y0, y1, x0, x1
    cdef const floating* src
    cdef floating* dst
    cdef floating best, v
    cdef const floating* row
    if n1 <= n0:
        return
    with nogil:
        for plane in range(n0 * C, n1 * C):  # one (n, c) image plane at a time
            src = &x[0, 0, 0, 0] + plane * H * W
            dst = &y[0, 0, 0, 0] + plane * oh * ow
            for oy in range(oh):
                for ox in range(ow):
                    dst[ox] = -INFINITY
                for ki in range(kh):
                    iy = oy * sh - ph + ki
                    if iy < 0 or iy >= H:
                        continue
                    for kj in range(kw):
                        _valid_range(W, ow, sw, kj - pw, &x0, &x1)
                        row = src + iy * W + kj - pw
                        # One offset for the whole output row, as a select (no data-dependent
                        # jump, so the compiler can vectorise it); a NaN wins and then sticks,
                        # as with np.maximum.
                        for ox in range(x0, x1):
                            v = row[ox * sw]
                            best = dst[ox]
                            dst[ox] = v if (v > best or v != v) else best
                dst += ow


def max_pool_2d_backward(const floating[:, :, :, ::1] og, const floating[:, :, :, ::1] x,
                         const floating[:, :, :, ::1] y, floating[:, :, :, ::1] dx, int kh, int kw,
                         int sh, int sw, int ph, int pw, int n0, int n1):
    """``dx[n]`` (overwritten) receives each window's gradient at the first offset, in kernel
    order, whose value equals the window's output, as ``og * hit`` exactly like the numpy twin.
    Offsets outside the input hold -inf: when one of those comes first (an all -inf window) the
    gradient is dropped, like the padded twin's."""
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3], oh = y.shape[2], ow = y.shape[3]
    cdef Py_ssize_t plane, oy, ox, iy, ki, kj, i, x0, x1, off
    cdef const floating* src
    cdef const floating* out
    cdef const floating* g
    cdef const floating* row
    cdef floating* dst
    cdef int hit
    cdef int* taken
    if n1 <= n0:
        return
    with nogil:
        taken = <int*> malloc(max(ow, 1) * sizeof(int))
        if taken == NULL:
            with gil:
                raise MemoryError("Pooling: no memory for the backward scratch row")
        for plane in range(n0 * C, n1 * C):
            src = &x[0, 0, 0, 0] + plane * H * W
            dst = &dx[0, 0, 0, 0] + plane * H * W
            for i in range(H * W):
                dst[i] = 0
            for oy in range(oh):
                out = &y[0, 0, 0, 0] + (plane * oh + oy) * ow
                g = &og[0, 0, 0, 0] + (plane * oh + oy) * ow
                for ox in range(ow):
                    taken[ox] = 0
                # Offset by offset over the whole output row (like the twin, without its
                # padded copy): `taken` marks the windows whose first maximum is already found.
                for ki in range(kh):
                    iy = oy * sh - ph + ki
                    for kj in range(kw):
                        off = kj - pw
                        if iy < 0 or iy >= H:
                            x0 = x1 = ow
                        else:
                            _valid_range(W, ow, sw, off, &x0, &x1)
                        for ox in range(x0, x1):
                            row = src + iy * W + off
                            hit = (row[ox * sw] == out[ox]) & (taken[ox] == 0)
                            taken[ox] |= hit
                            dst[iy * W + ox * sw + off] += g[ox] * hit
                        # Outside the input the value is -inf: it takes an all -inf window.
                        for ox in range(x0):
                            taken[ox] |= out[ox] == -INFINITY
                        for ox in range(x1, ow):
                            taken[ox] |= out[ox] == -INFINITY
        free(taken)


# --- depthwise convolution: one input channel per group (MobileNet's 3x3 filters) ---------------
# im2col + one GEMM per group would make ``C`` GEMMs of one row each: these loops filter each
# plane directly. They work on the output channels ``f0 <= f < f1`` (input channel ``f // m``,
# ``m`` = output channels per group) for every sample, so the weight gradient of a channel is
# summed by one thread, in one order.

def depthwise_2d(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w,
                 floating[:, :, :, ::1] out, int sh, int sw, int dh, int dw, int ph, int pw,
                 int f0, int f1):
    """``out[n, f, oy, ox] = sum_{ki, kj} w[f, 0, ki, kj] * x[n, f // m, oy*sh - ph + ki*dh,
    ox*sw - pw + kj*dw]`` (0 outside the input)."""
    cdef Py_ssize_t N = x.shape[0], H = x.shape[2], W = x.shape[3], kh = w.shape[2], kw = w.shape[3]
    cdef Py_ssize_t F = out.shape[1], oh = out.shape[2], ow = out.shape[3]
    cdef Py_ssize_t m = F // x.shape[1]
    cdef Py_ssize_t n, f, oy, ox, ki, kj, iy, off, lo, hi, i
    cdef const floating* src
    cdef const floating* srow
    cdef floating* dst
    cdef floating* drow
    cdef floating wv
    if f1 <= f0:
        return
    with nogil:
        for n in range(N):
            for f in range(f0, f1):
                src = &x[n, f // m, 0, 0]
                dst = &out[n, f, 0, 0]
                for i in range(oh * ow):
                    dst[i] = 0
                for oy in range(oh):
                    for ki in range(kh):
                        iy = oy * sh - ph + ki * dh
                        if iy < 0 or iy >= H:
                            continue
                        for kj in range(kw):
                            off = kj * dw - pw
                            _valid_range(W, ow, sw, off, &lo, &hi)
                            wv = w[f, 0, ki, kj]
                            srow = src + iy * W + off
                            drow = dst + oy * ow
                            if sw == 1:     # unit stride: a loop the compiler vectorises
                                for ox in range(lo, hi):
                                    drow[ox] += wv * srow[ox]
                            else:
                                for ox in range(lo, hi):
                                    drow[ox] += wv * srow[ox * sw]


def depthwise_2d_backward(const floating[:, :, :, ::1] og, const floating[:, :, :, ::1] x,
                          const floating[:, :, :, ::1] w, floating[:, :, :, ::1] dx,
                          floating[:, :, :, ::1] dwt, int want_dx, int want_dw, int sh, int sw,
                          int dh, int dw, int ph, int pw, int c0, int c1):
    """The data gradient ``dx`` (overwritten) of the input channels ``c0 <= c < c1`` and the
    weight gradient ``dwt`` (overwritten) of their output channels: the adjoints of
    ``depthwise_2d``. Weight sums run in double precision over samples, then output rows."""
    cdef Py_ssize_t N = x.shape[0], H = x.shape[2], W = x.shape[3], kh = w.shape[2], kw = w.shape[3]
    cdef Py_ssize_t F = og.shape[1], oh = og.shape[2], ow = og.shape[3]
    cdef Py_ssize_t m = F // x.shape[1]
    cdef Py_ssize_t n, c, j, f, oy, ox, ki, kj, iy, off, lo, hi, i
    cdef const floating* g
    cdef const floating* grow
    cdef const floating* src
    cdef floating* dst
    cdef floating* drow
    cdef floating wv
    cdef double acc
    if c1 <= c0:
        return
    with nogil:
        for c in range(c0, c1):
            if want_dx:
                for n in range(N):
                    dst = &dx[n, c, 0, 0]
                    for i in range(H * W):
                        dst[i] = 0
                    for j in range(m):
                        f = c * m + j
                        g = &og[n, f, 0, 0]
                        for oy in range(oh):
                            for ki in range(kh):
                                iy = oy * sh - ph + ki * dh
                                if iy < 0 or iy >= H:
                                    continue
                                for kj in range(kw):
                                    off = kj * dw - pw
                                    _valid_range(W, ow, sw, off, &lo, &hi)
                                    wv = w[f, 0, ki, kj]
                                    drow = dst + iy * W + off
                                    grow = g + oy * ow
                                    if sw == 1:
                                        for ox in range(lo, hi):
                                            drow[ox] += wv * grow[ox]
                                    else:
                                        for ox in range(lo, hi):
                                            drow[ox * sw] += wv * grow[ox]
            if want_dw:
                for j in range(m):
                    f = c * m + j
                    for ki in range(kh):
                        for kj in range(kw):
                            off = kj * dw - pw
                            _valid_range(W, ow, sw, off, &lo, &hi)
                            acc = 0
                            for n in range(N):
                                g = &og[n, f, 0, 0]
                                src = &x[n, c, 0, 0]
                                for oy in range(oh):
                                    iy = oy * sh - ph + ki * dh
                                    if iy < 0 or iy >= H:
                                        continue
                                    for ox in range(lo, hi):
                                        acc += g[oy * ow + ox] * src[iy * W + ox * sw + off]
                            dwt[f, 0, ki, kj] = <floating> acc


# --- relu (Activation act_type='relu'; twin: ``mxref/ops/activations.py``'s relu card) ----------
# One pass each, no temporaries: numpy's ``maximum`` carries a NaN check per element and its
# backward ``g * (y > 0)`` first builds a bool array then multiplies float by bool.

def relu_forward(const floating[::1] x, floating[::1] out, Py_ssize_t lo, Py_ssize_t hi):
    """``out = max(x, 0)`` on ``[lo, hi)`` as ``np.maximum`` has it: NaN passes through
    (``NaN <= 0`` is false), -0.0 becomes +0.0. ``out`` may be ``x`` (in place)."""
    cdef Py_ssize_t i
    cdef floating v
    with nogil:
        for i in range(lo, hi):
            v = x[i]
            out[i] = 0 if v <= 0 else v


def relu_backward(const floating[::1] g, const floating[::1] y, floating[::1] dx, Py_ssize_t lo,
                  Py_ssize_t hi):
    """``dx = g * [y > 0]`` on ``[lo, hi)``: a real multiply by 1 or 0 (so ``g`` = inf or NaN
    where ``y <= 0`` still gives NaN, and a negative ``g`` gives -0.0, as numpy's product does).
    ``dx`` may be ``g`` (in place)."""
    cdef Py_ssize_t i
    cdef floating one = 1, zero = 0
    with nogil:
        for i in range(lo, hi):
            dx[i] = g[i] * (one if y[i] > 0 else zero)


# --- depthwise convolution, batch innermost (small planes: MobileNet's 16x16 .. 1x1) -------------
# The loops above run along an output row, which is 2-8 wide in a CIFAR-sized MobileNet: the loop
# overhead and the padding checks then cost more than the multiply-adds. These gather one channel
# of every sample into a zero-padded buffer ``P[row, col, n]`` (the batch innermost), so every tap
# becomes one contiguous, bounds-free loop over the batch that the compiler vectorises, and scatter
# the result back. Same work split (output or input channels per call), so the bits do not depend
# on the thread count.

cdef inline void _gather_nlast(const floating* src, floating* buf, Py_ssize_t N, Py_ssize_t stride,
                               Py_ssize_t H, Py_ssize_t W, Py_ssize_t Wb, Py_ssize_t ph,
                               Py_ssize_t pw) noexcept nogil:
    """``buf[((r + ph) * Wb + q + pw) * N + n] = src[n * stride + r * W + q]`` (the rest untouched)."""
    cdef Py_ssize_t n, r, q
    cdef const floating* s
    cdef floating* d
    for n in range(N):
        s = src + n * stride
        for r in range(H):
            d = buf + ((r + ph) * Wb + pw) * N + n
            for q in range(W):
                d[q * N] = s[r * W + q]


cdef inline void _scatter_nlast(const floating* buf, floating* dst, Py_ssize_t N, Py_ssize_t stride,
                                Py_ssize_t H, Py_ssize_t W, Py_ssize_t Wb, Py_ssize_t ph,
                                Py_ssize_t pw) noexcept nogil:
    """The inverse of ``_gather_nlast``: ``dst[n * stride + r * W + q] = buf[...]``."""
    cdef Py_ssize_t n, r, q
    cdef const floating* s
    cdef floating* d
    for n in range(N):
        d = dst + n * stride
        for r in range(H):
            s = buf + ((r + ph) * Wb + pw) * N + n
            for q in range(W):
                d[r * W + q] = s[q * N]


cdef inline Py_ssize_t _span(Py_ssize_t size, Py_ssize_t out, Py_ssize_t k, Py_ssize_t s,
                             Py_ssize_t d, Py_ssize_t p) noexcept nogil:
    """Rows (or columns) of the padded buffer: every tap's reach and the whole input after ``p``."""
    return max((out - 1) * s + (k - 1) * d + 1, size + p)


def depthwise_2d_nlast(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w,
                       floating[:, :, :, ::1] out, int sh, int sw, int dh, int dw, int ph, int pw,
                       int f0, int f1):
    """``depthwise_2d`` (the same sums, each in tap order) with the batch innermost."""
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t kh = w.shape[2], kw = w.shape[3], F = out.shape[1], oh = out.shape[2], ow = out.shape[3]
    cdef Py_ssize_t m = F // C, Hb = _span(H, oh, kh, sh, dh, ph), Wb = _span(W, ow, kw, sw, dw, pw)
    cdef Py_ssize_t f, c, prev = -1, n, oy, ox, ki, kj, i
    cdef floating wv
    cdef floating* dst
    cdef const floating* src
    if f1 <= f0 or N == 0:
        return
    cdef floating* P = <floating*> malloc(Hb * Wb * N * sizeof(floating))
    cdef floating* O = <floating*> malloc(oh * ow * N * sizeof(floating))
    if P == NULL or O == NULL:
        free(P)
        free(O)
        raise MemoryError("depthwise_2d_nlast: buffers")
    with nogil:
        for i in range(Hb * Wb * N):
            P[i] = 0
        for f in range(f0, f1):
            c = f // m
            if c != prev:
                _gather_nlast(&x[0, c, 0, 0], P, N, C * H * W, H, W, Wb, ph, pw)
                prev = c
            for oy in range(oh):
                for ox in range(ow):
                    dst = O + (oy * ow + ox) * N
                    for n in range(N):
                        dst[n] = 0
                    for ki in range(kh):
                        for kj in range(kw):
                            wv = w[f, 0, ki, kj]
                            src = P + ((oy * sh + ki * dh) * Wb + ox * sw + kj * dw) * N
                            for n in range(N):
                                dst[n] += wv * src[n]
            _scatter_nlast(O, &out[0, f, 0, 0], N, F * oh * ow, oh, ow, ow, 0, 0)
    free(P)
    free(O)


# Output positions summed in the working precision before a weight gradient's partial sums go to
# the double total (a float32 sum of a few hundred products stays well inside the kernel's 1e-4).
cdef enum:
    _FLUSH_POSITIONS = 256


def depthwise_2d_backward_nlast(const floating[:, :, :, ::1] og, const floating[:, :, :, ::1] x,
                                const floating[:, :, :, ::1] w, floating[:, :, :, ::1] dx,
                                floating[:, :, :, ::1] dwt, int want_dx, int want_dw, int sh, int sw,
                                int dh, int dw, int ph, int pw, int c0, int c1):
    """``depthwise_2d_backward`` with the batch innermost: one pass over the output positions
    adds each tap's ``w * dout`` into the padded data gradient and ``dout * x`` into per-sample
    weight sums (working precision, moved to a double total every ``_FLUSH_POSITIONS``)."""
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t kh = w.shape[2], kw = w.shape[3], F = og.shape[1], oh = og.shape[2], ow = og.shape[3]
    cdef Py_ssize_t m = F // C, Hb = _span(H, oh, kh, sh, dh, ph), Wb = _span(W, ow, kw, sw, dw, pw)
    cdef Py_ssize_t K = kh * kw, c, j, f, n, oy, ox, ki, kj, k, i, idx, since = 0
    cdef floating wv
    cdef double part
    cdef const floating* g
    cdef const floating* p
    cdef floating* d
    cdef floating* a
    if c1 <= c0 or N == 0:
        return
    cdef floating* P = <floating*> malloc(Hb * Wb * N * sizeof(floating))
    cdef floating* D = <floating*> malloc(Hb * Wb * N * sizeof(floating))
    cdef floating* G = <floating*> malloc(oh * ow * N * sizeof(floating))
    cdef floating* acc = <floating*> malloc(K * N * sizeof(floating))
    cdef double* total = <double*> malloc(K * sizeof(double))
    if P == NULL or D == NULL or G == NULL or acc == NULL or total == NULL:
        free(P)
        free(D)
        free(G)
        free(acc)
        free(total)
        raise MemoryError("depthwise_2d_backward_nlast: buffers")
    with nogil:
        for i in range(Hb * Wb * N):
            P[i] = 0
        for c in range(c0, c1):
            if want_dw:
                _gather_nlast(&x[0, c, 0, 0], P, N, C * H * W, H, W, Wb, ph, pw)
            if want_dx:
                for i in range(Hb * Wb * N):
                    D[i] = 0
            for j in range(m):
                f = c * m + j
                _gather_nlast(&og[0, f, 0, 0], G, N, F * oh * ow, oh, ow, ow, 0, 0)
                for i in range(K * N):
                    acc[i] = 0
                for k in range(K):
                    total[k] = 0
                since = 0
                for oy in range(oh):
                    for ox in range(ow):
                        g = G + (oy * ow + ox) * N
                        for ki in range(kh):
                            for kj in range(kw):
                                idx = ((oy * sh + ki * dh) * Wb + ox * sw + kj * dw) * N
                                if want_dx:
                                    wv = w[f, 0, ki, kj]
                                    d = D + idx
                                    for n in range(N):
                                        d[n] += wv * g[n]
                                if want_dw:
                                    p = P + idx
                                    a = acc + (ki * kw + kj) * N
                                    for n in range(N):
                                        a[n] += g[n] * p[n]
                        since += 1
                        if want_dw and (since == _FLUSH_POSITIONS or (oy == oh - 1 and ox == ow - 1)):
                            for k in range(K):
                                part = 0
                                for n in range(N):
                                    part += acc[k * N + n]
                                    acc[k * N + n] = 0
                                total[k] += part
                            since = 0
                if want_dw:
                    for ki in range(kh):
                        for kj in range(kw):
                            dwt[f, 0, ki, kj] = <floating> total[ki * kw + kj]
            if want_dx:
                _scatter_nlast(D, &dx[0, c, 0, 0], N, C * H * W, H, W, Wb, ph, pw)
    free(P)
    free(D)
    free(G)
    free(acc)
    free(total)


def clip_backward(const floating[::1] g, const floating[::1] x, floating[::1] dx, double a_min,
                  double a_max, Py_ssize_t lo, Py_ssize_t hi):
    """``dx = g * [a_min <= x <= a_max]`` on ``[lo, hi)`` (``_backward_clip``; ReLU6's gradient),
    the bounds in ``x``'s precision and a real multiply by 1 or 0, as numpy's
    ``g * ((x >= a_min) & (x <= a_max))`` has them. ``dx`` may be ``g`` (in place)."""
    cdef Py_ssize_t i
    cdef floating one = 1, zero = 0, fmin = <floating> a_min, fmax = <floating> a_max
    with nogil:
        for i in range(lo, hi):
            dx[i] = g[i] * (one if (x[i] >= fmin and x[i] <= fmax) else zero)
