# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""ImageRecordIter's per-image loop in C: separable resize (given its weight rows), crop, mirror
and normalisation in one pass (twin: ``mxref/ops/image/resample.py``'s ``resize`` then the
iterator's numpy crop, flip and ``(pixel - mean) * scale / std``)."""
from libc.stdlib cimport free, malloc


cdef inline void _taps(const double[:, ::1] wt, Py_ssize_t i, Py_ssize_t* lo, Py_ssize_t* hi) noexcept nogil:
    """``[lo, hi)``: the span of row ``i``'s non-zero weights (a filter reads a few neighbours)."""
    cdef Py_ssize_t n = wt.shape[1], a = 0, b = n
    while a < n and wt[i, a] == 0:
        a += 1
    while b > a and wt[i, b - 1] == 0:
        b -= 1
    lo[0] = a
    hi[0] = b


cdef inline float _to_u8(double acc) noexcept nogil:
    """``acc`` rounded half to even (``np.rint``) and saturated to 0..255, as a float; no libm
    call per pixel."""
    cdef int q
    cdef double frac
    if acc <= 0:
        return 0
    if acc >= 255:
        return 255
    q = <int> acc
    frac = acc - q
    if frac > 0.5 or (frac == 0.5 and q & 1):
        q += 1
    return <float> q


def resize_crop_normalize(const unsigned char[:, :, ::1] img, const double[:, ::1] wy,
                          const double[:, ::1] wx, int y0, int x0, int mirror,
                          const float[::1] mean, const float[::1] mult, float[:, :, ::1] out):
    """``out[c, i, j] = (float(u8(sum_k sum_l wy[y0 + i, k] * img[k, l, c] * wx[col(j), l])) - mean[c]) * mult[c]``
    with ``col(j) = x0 + j``, or ``x0 + w - 1 - j`` when ``mirror``.

    ``wy`` (resized height x H) and ``wx`` (resized width x W) are the resize's weight rows; only
    the crop's rows and columns are computed. Rows are filtered first, in double precision, then
    columns, then rounded half to even and saturated to 0..255, as the twin does.
    """
    cdef Py_ssize_t H = img.shape[0], W = img.shape[1], C = img.shape[2]
    cdef Py_ssize_t h = out.shape[1], w = out.shape[2], col
    cdef Py_ssize_t i, j, k, l, c, lo, hi
    cdef double acc, v, a0, a1, a2
    cdef double* rows
    cdef Py_ssize_t* spans
    cdef const unsigned char* src
    with nogil:
        rows = <double*> malloc(max(W * C, 1) * sizeof(double))
        spans = <Py_ssize_t*> malloc(max(2 * w, 1) * sizeof(Py_ssize_t))
        if rows == NULL or spans == NULL:
            free(rows)
            free(spans)
            with gil:
                raise MemoryError("ImageRecordIter: no memory for a resize row")
        for j in range(w):          # the column taps, found once for every row
            col = x0 + (w - 1 - j if mirror else j)
            _taps(wx, col, &spans[2 * j], &spans[2 * j + 1])
        for i in range(h):
            # the output row's source row: sum over the taps of wy[i]
            _taps(wy, y0 + i, &lo, &hi)
            for l in range(W * C):
                rows[l] = 0
            for k in range(lo, hi):
                v = wy[y0 + i, k]
                src = &img[k, 0, 0]
                for l in range(W * C):
                    rows[l] += v * src[l]
            for j in range(w):
                lo, hi = spans[2 * j], spans[2 * j + 1]
                col = x0 + (w - 1 - j if mirror else j)
                if C == 3:      # the three channels in one sweep of the taps (same order per channel)
                    a0 = a1 = a2 = 0
                    for l in range(lo, hi):
                        v = wx[col, l]
                        a0 += v * rows[3 * l]
                        a1 += v * rows[3 * l + 1]
                        a2 += v * rows[3 * l + 2]
                    out[0, i, j] = (_to_u8(a0) - mean[0]) * mult[0]
                    out[1, i, j] = (_to_u8(a1) - mean[1]) * mult[1]
                    out[2, i, j] = (_to_u8(a2) - mean[2]) * mult[2]
                    continue
                for c in range(C):
                    acc = 0
                    for l in range(lo, hi):
                        acc += wx[col, l] * rows[l * C + c]
                    out[c, i, j] = (_to_u8(acc) - mean[c]) * mult[c]
        free(rows)
        free(spans)
