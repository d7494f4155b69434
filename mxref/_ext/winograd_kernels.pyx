# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Winograd F(2x2, 3x3) tile transforms in C for 3x3 stride-1 Convolution (host code and the
weight transform: ``mxref/ops/nn/winograd.py``; the reference is Convolution's im2col path).

A 3x3 filter over a 4x4 input tile gives a 2x2 output tile with 16 multiplies instead of 36
(Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016)::

    Y = A^T [ (G g G^T) * (B^T d B) ] A        (* elementwise over the 4x4 tile)

    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]

Summed over the input channels, the 16 elementwise products become 16 GEMMs
``M[k] = U[k] @ V[k]`` (``U``: transformed weights ``(16, F, C)``, ``V``: transformed input
tiles ``(16, C, T)``), which numpy's BLAS runs. These loops make ``V`` and turn ``M`` back into
output pixels for one chunk: the samples ``n0 <= n < n1`` and their tile rows ``ty0 <= ty < ty1``,
tile ``t`` being ``(n - n0, ty - ty0, tx)`` row-major. They release the GIL, so two chunks run on
two threads. The 16 matrices of ``U``, ``V`` and ``M`` may lie any whole number of elements apart
(axis 0's stride): the host pads that distance so a tile's 16 entries do not share a cache set.
"""
from cython cimport floating
from libc.stdlib cimport free, malloc


def input_tiles(const floating[:, :, :, ::1] x, floating[:, :, :] v, int ph, int pw, int ty0,
                int ty1, int tw, int n0, int n1):
    """``v[k, c, t]`` = entry ``k`` (row-major) of ``B^T d B`` for the 4x4 tile ``d`` of channel
    ``c`` whose top-left input pixel is ``(2 ty - ph, 2 tx - pw)``; pixels outside read 0."""
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t ks = v.strides[0] // sizeof(floating)
    cdef Py_ssize_t wp = 2 * tw + 2, th = ty1 - ty0, n, c, ty, tx, i, iy, t0, j
    # Positions j of a padded row holding pixel j - pw: [lo, hi).
    cdef Py_ssize_t lo = min(pw, wp), hi = max(lo, min(wp, W + pw))
    cdef const floating* src
    cdef floating* rows
    cdef floating* r
    cdef floating* tr
    cdef floating* dst
    cdef floating a0, a1, a2, a3
    if n1 <= n0:
        return
    with nogil:
        # 4 padded input rows, then their 4 row-transformed combinations (B^T d), each wp long.
        rows = <floating*> malloc(8 * wp * sizeof(floating))
        if rows == NULL:
            with gil:
                raise MemoryError("Convolution (Winograd): no memory for the tile rows")
        tr = rows + 4 * wp
        for n in range(n0, n1):
            for c in range(C):
                for ty in range(ty0, ty1):
                    for i in range(4):
                        r = rows + i * wp
                        iy = 2 * ty - ph + i
                        if iy < 0 or iy >= H:
                            for j in range(wp):
                                r[j] = 0
                        else:           # zeros, the row's pixels [lo, hi), zeros
                            src = &x[n, c, iy, 0]
                            for j in range(lo):
                                r[j] = 0
                            for j in range(lo, hi):
                                r[j] = src[j - pw]
                            for j in range(hi, wp):
                                r[j] = 0
                    for j in range(wp):     # B^T d, row by row over the whole tile row
                        tr[j] = rows[j] - rows[2 * wp + j]
                        tr[wp + j] = rows[wp + j] + rows[2 * wp + j]
                        tr[2 * wp + j] = rows[2 * wp + j] - rows[wp + j]
                        tr[3 * wp + j] = rows[wp + j] - rows[3 * wp + j]
                    t0 = ((n - n0) * th + ty - ty0) * tw
                    for i in range(4):      # (B^T d) B, column by column, tile by tile
                        r = tr + i * wp
                        for tx in range(tw):
                            a0 = r[2 * tx]
                            a1 = r[2 * tx + 1]
                            a2 = r[2 * tx + 2]
                            a3 = r[2 * tx + 3]
                            dst = &v[4 * i, c, t0 + tx]
                            dst[0] = a0 - a2
                            dst[ks] = a1 + a2
                            dst[2 * ks] = a2 - a1
                            dst[3 * ks] = a1 - a3
        free(rows)


def output_tiles(const floating[:, :, :] m, floating[:, :, :, ::1] out, const floating[::1] bias,
                 int has_bias, int ty0, int ty1, int tw, int n0, int n1):
    """``out[n, f, 2 ty + a, 2 tx + b]`` = entry ``(a, b)`` of ``A^T m A`` (+ ``bias[f]``) for
    the 4x4 tile ``m[:, f, t]``; the parts of edge tiles past the output are dropped."""
    cdef Py_ssize_t F = out.shape[1], OH = out.shape[2], OW = out.shape[3]
    cdef Py_ssize_t n, f, ty, tx, k, t0, oy, j, s = m.strides[0] // sizeof(floating)
    cdef Py_ssize_t th = ty1 - ty0
    cdef const floating* src
    cdef floating* y
    cdef floating* dst
    cdef floating b, s0, s1, s2, s3, q0, q1, q2, q3
    if n1 <= n0:
        return
    with nogil:
        y = <floating*> malloc(4 * (tw + 1) * sizeof(floating))     # two output rows
        if y == NULL:
            with gil:
                raise MemoryError("Convolution (Winograd): no memory for the output rows")
        for n in range(n0, n1):
            for f in range(F):
                b = bias[f] if has_bias else 0
                for ty in range(ty0, ty1):
                    t0 = ((n - n0) * th + ty - ty0) * tw
                    for tx in range(tw):
                        src = &m[0, f, t0 + tx]
                        # A^T m: rows 0 + 1 + 2 and 1 - 2 - 3 of the 4x4 tile, column by column
                        s0 = src[0] + src[4 * s] + src[8 * s]
                        s1 = src[s] + src[5 * s] + src[9 * s]
                        s2 = src[2 * s] + src[6 * s] + src[10 * s]
                        s3 = src[3 * s] + src[7 * s] + src[11 * s]
                        q0 = src[4 * s] - src[8 * s] - src[12 * s]
                        q1 = src[5 * s] - src[9 * s] - src[13 * s]
                        q2 = src[6 * s] - src[10 * s] - src[14 * s]
                        q3 = src[7 * s] - src[11 * s] - src[15 * s]
                        y[2 * tx] = s0 + s1 + s2 + b
                        y[2 * tx + 1] = s1 - s2 - s3 + b
                        y[2 * tw + 2 * tx] = q0 + q1 + q2 + b
                        y[2 * tw + 2 * tx + 1] = q1 - q2 - q3 + b
                    for k in range(2):
                        oy = 2 * ty + k
                        if oy < OH:
                            dst = &out[n, f, oy, 0]
                            for j in range(OW):
                                dst[j] = y[2 * tw * k + j]
        free(y)


def weight_tiles(const floating[:, :, :, ::1] w, floating[:, :, :] u, int flip, int f0, int f1):
    """``u[k, f, c]`` = entry ``k`` of ``G g G^T``, ``g = w[f, c]`` (``flip``: ``g = w[c, f]``
    turned by 180 degrees, the data gradient's filter), for ``f0 <= f < f1``; ``G`` has rows
    ``(1, 0, 0), (1/2, 1/2, 1/2), (1/2, -1/2, 1/2), (0, 0, 1)``."""
    cdef Py_ssize_t C = u.shape[2], s = u.strides[0] // sizeof(floating), f, c, i, j
    cdef floating g[9]
    cdef floating r[12]
    cdef floating* dst
    cdef const floating* src
    with nogil:
        for f in range(f0, f1):
            for c in range(C):
                if flip:
                    src = &w[c, f, 0, 0]
                    for i in range(9):
                        g[i] = src[8 - i]
                else:
                    src = &w[f, c, 0, 0]
                    for i in range(9):
                        g[i] = src[i]
                for j in range(3):      # G g: rows 0, (0+1+2)/2, (0-1+2)/2, 2, column by column
                    r[j] = g[j]
                    r[3 + j] = (g[j] + g[6 + j] + g[3 + j]) * 0.5
                    r[6 + j] = (g[j] + g[6 + j] - g[3 + j]) * 0.5
                    r[9 + j] = g[6 + j]
                dst = &u[0, f, c]
                for i in range(4):      # (G g) G^T, the same on each row
                    dst[(4 * i) * s] = r[3 * i]
                    dst[(4 * i + 1) * s] = (r[3 * i] + r[3 * i + 2] + r[3 * i + 1]) * 0.5
                    dst[(4 * i + 2) * s] = (r[3 * i] + r[3 * i + 2] - r[3 * i + 1]) * 0.5
                    dst[(4 * i + 3) * s] = r[3 * i + 2]
