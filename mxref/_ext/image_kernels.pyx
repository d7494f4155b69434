# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""ImageRecordIter's per-image loop in C: separable resize (given its taps), crop, mirror and
normalisation in one pass, without the GIL (twin: ``mxref/ops/image/resample.py``'s ``resize``
then the iterator's numpy crop, flip and ``(pixel - mean) * scale / std``)."""
from libc.stdlib cimport free, malloc


cdef inline float _to_u8(double acc) noexcept nogil:
    """``acc`` rounded half to even (``np.rint``) and saturated to 0..255, as a float, without
    branches: adding and subtracting 1.5 * 2**52 leaves the nearest integer (ties to even, the
    FPU's default rounding) for any ``|acc| < 2**51``."""
    cdef double big = 6755399441055744.0
    cdef double q
    acc = 0.0 if acc < 0.0 else acc
    acc = 255.0 if acc > 255.0 else acc
    q = (acc + big) - big
    return <float> q


def resize_crop_normalize(const unsigned char[:, :, :] img, const Py_ssize_t[::1] ylo,
                          const double[:, ::1] wy, const Py_ssize_t[::1] xlo, const double[:, ::1] wx,
                          int y0, int x0, int mirror, const float[::1] mean, const float[::1] mult,
                          float[:, :, ::1] out):
    """``out[c, i, j] = (float(u8(sum_t sum_s wy[y0+i, t] * img[ylo[y0+i]+t, xlo[col]+s, c] * wx[col, s])) - mean[c]) * mult[c]``
    with ``col = x0 + j``, or ``x0 + w - 1 - j`` when ``mirror``.

    The resize's weights come as taps: output row ``r`` reads source rows ``ylo[r] ...
    ylo[r] + T - 1`` with weights ``wy[r, :]`` (``T`` taps, zero-padded, in the order of the dense
    weight row), columns likewise. Only the crop's rows and columns are computed: rows filtered
    first, in double precision, then columns, then rounded half to even and saturated to 0..255,
    as the twin does; a zero tap adds an exact zero, so the sums are the twin's. ``img`` may be
    strided (an RGBX buffer viewed as RGB).
    """
    cdef Py_ssize_t C = img.shape[2], h = out.shape[1], w = out.shape[2]
    cdef Py_ssize_t ty = wy.shape[1], tx = wx.shape[1]
    cdef Py_ssize_t rs = img.strides[0], ps = img.strides[1], cs = img.strides[2]
    cdef Py_ssize_t i, j, k, l, c, col, r, x_lo, x_hi, n, P
    cdef double acc, v, a0, a1, a2
    cdef double* rows
    cdef double* rp
    cdef const unsigned char* base = &img[0, 0, 0]
    cdef const double* wp
    cdef float* o0
    cdef float* o1
    cdef float* o2
    cdef Py_ssize_t* offs
    cdef float m0 = mean[0], m1 = mean[C - 1], m2 = mean[C - 1], k0 = mult[0], k1 = mult[C - 1], k2 = mult[C - 1]
    cdef const unsigned char* src
    x_lo, x_hi = xlo[x0], xlo[x0] + tx     # the source columns the crop reads: one filtered row's span
    for j in range(w):
        if xlo[x0 + j] < x_lo:
            x_lo = xlo[x0 + j]
        if xlo[x0 + j] + tx > x_hi:
            x_hi = xlo[x0 + j] + tx
    if C == 3:
        m1, m2, k1, k2 = mean[1], mean[2], mult[1], mult[2]
    # the filtered row's pixel stride: 4 for Pillow's RGBX (the unused X byte is filtered too, so
    # the row pass runs over contiguous bytes), else the channel count
    P = 4 if (C == 3 and cs == 1 and ps == 4) else C
    n = (x_hi - x_lo) * P
    with nogil:
        rows = <double*> malloc(max(n, 1) * sizeof(double))
        offs = <Py_ssize_t*> malloc(max(w, 1) * sizeof(Py_ssize_t))
        if rows == NULL or offs == NULL:
            free(rows)
            free(offs)
            with gil:
                raise MemoryError("ImageRecordIter: no memory for a resize row")
        for j in range(w):          # where output column j's taps start in a filtered row
            col = x0 + (w - 1 - j if mirror else j)
            offs[j] = (xlo[col] - x_lo) * P
        for i in range(h):
            r = y0 + i
            for l in range(n):
                rows[l] = 0
            for k in range(ty):
                v = wy[r, k]
                src = base + (ylo[r] + k) * rs + x_lo * ps
                if cs == 1 and ps == P:
                    for l in range(n):
                        rows[l] += v * src[l]
                else:
                    for l in range(x_hi - x_lo):
                        for c in range(C):
                            rows[l * C + c] += v * src[l * ps + c * cs]
            if C == 3:      # the three channels in one sweep of the taps (same order per channel)
                o0, o1, o2 = &out[0, i, 0], &out[1, i, 0], &out[2, i, 0]
                for j in range(w):
                    col = x0 + (w - 1 - j if mirror else j)
                    wp = &wx[col, 0]
                    rp = rows + offs[j]
                    a0 = a1 = a2 = 0
                    for l in range(tx):
                        v = wp[l]
                        a0 += v * rp[P * l]
                        a1 += v * rp[P * l + 1]
                        a2 += v * rp[P * l + 2]
                    o0[j] = (_to_u8(a0) - m0) * k0
                    o1[j] = (_to_u8(a1) - m1) * k1
                    o2[j] = (_to_u8(a2) - m2) * k2
                continue
            for j in range(w):
                col = x0 + (w - 1 - j if mirror else j)
                rp = rows + offs[j]
                for c in range(C):
                    acc = 0
                    for l in range(tx):
                        acc += wx[col, l] * rp[l * C + c]
                    out[c, i, j] = (_to_u8(acc) - mean[c]) * mult[c]
        free(offs)
        free(rows)
