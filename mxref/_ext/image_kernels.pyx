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
    cdef Py_ssize_t i, j, k, l, c, col, r, x_lo, x_hi, n
    cdef double acc, v, a0, a1, a2
    cdef double* rows
    cdef double* rp
    cdef const unsigned char* base = &img[0, 0, 0]
    cdef const unsigned char* src
    x_lo, x_hi = xlo[x0], xlo[x0] + tx     # the source columns the crop reads: one filtered row's span
    for j in range(w):
        if xlo[x0 + j] < x_lo:
            x_lo = xlo[x0 + j]
        if xlo[x0 + j] + tx > x_hi:
            x_hi = xlo[x0 + j] + tx
    n = (x_hi - x_lo) * C
    with nogil:
        rows = <double*> malloc(max(n, 1) * sizeof(double))
        if rows == NULL:
            with gil:
                raise MemoryError("ImageRecordIter: no memory for a resize row")
        for i in range(h):
            r = y0 + i
            for l in range(n):
                rows[l] = 0
            for k in range(ty):
                v = wy[r, k]
                src = base + (ylo[r] + k) * rs + x_lo * ps
                if cs == 1 and ps == C:
                    for l in range(n):
                        rows[l] += v * src[l]
                elif cs == 1 and C == 3:        # RGB inside 4-byte pixels (Pillow's RGBX)
                    for l in range(x_hi - x_lo):
                        rows[3 * l] += v * src[l * ps]
                        rows[3 * l + 1] += v * src[l * ps + 1]
                        rows[3 * l + 2] += v * src[l * ps + 2]
                else:
                    for l in range(x_hi - x_lo):
                        for c in range(C):
                            rows[l * C + c] += v * src[l * ps + c * cs]
            for j in range(w):
                col = x0 + (w - 1 - j if mirror else j)
                rp = rows + (xlo[col] - x_lo) * C
                if C == 3:      # the three channels in one sweep of the taps (same order per channel)
                    a0 = a1 = a2 = 0
                    for l in range(tx):
                        v = wx[col, l]
                        a0 += v * rp[3 * l]
                        a1 += v * rp[3 * l + 1]
                        a2 += v * rp[3 * l + 2]
                    out[0, i, j] = (_to_u8(a0) - mean[0]) * mult[0]
                    out[1, i, j] = (_to_u8(a1) - mean[1]) * mult[1]
                    out[2, i, j] = (_to_u8(a2) - mean[2]) * mult[2]
                    continue
                for c in range(C):
                    acc = 0
                    for l in range(tx):
                        acc += wx[col, l] * rp[l * C + c]
                    out[c, i, j] = (_to_u8(acc) - mean[c]) * mult[c]
        free(rows)
