"""Winograd F(2x2, 3x3): Convolution's fast forward and data gradient for 3x3 stride-1 filters.

Each 2x2 output tile costs 16 multiplies per (input, output) channel pair instead of im2col's 36
(2.25x fewer), the elementwise products over channels summed as 16 GEMMs (Lavin & Gray, 2016)::

    U[k] = (G g G^T)[k]   (16, F, C)     G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]
    V[k] = (B^T d B)[k]   (16, C, T)     over the T tiles d (4x4, stride 2) of the padded input
    M[k] = U[k] @ V[k]    (16, F, T)     out tile = A^T M A (+ bias)

The transforms run in C (``mxref/_ext/winograd_kernels.pyx``) on chunks of samples (of tile rows
for large images) small enough for ``V`` and ``M`` to stay in cache, a range of samples per
operator thread. The results are not im2col's bits: the transforms add and subtract before
multiplying, so they round differently (float32: about 1e-6 of the output's largest magnitude
on ResNet's shapes; the kernel states ``TOL``).

The data gradient of a 3x3 stride-1 Convolution is itself one: ``ddata = conv(dout, W')`` with
``W'[c, f] = W[f, c]`` flipped in both axes and padding ``2 - pad``, so it runs here too.
"""
from __future__ import annotations

import numpy as np

from ..._ext import loader
from .. import parallel
from ..registry import assign

C = loader.load("winograd_kernels", "Winograd 3x3 Convolution")
DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# Below this many channels the transforms cost more than the multiplies they save (a first
# layer over 3 colour channels stays on im2col).
MIN_CHANNELS = 16
# Tiles per chunk: enough columns for an efficient GEMM, few enough for V and M to stay in cache.
CHUNK_TILES = 512
# (rtol, atol) against the im2col reference: what Convolution's 'cpu' kernel states.
TOL = {"float32": (1e-4, 1e-4), "float64": (1e-12, 1e-12)}


def applies(p: dict, geom, x_shape, w_shape, out_shape, dtype) -> bool:
    """A 2-D 3x3 filter, stride and dilation 1, one group, pad <= 2, enough channels, an output
    of at least 2x2 (a 1x1 output would waste 3/4 of its tile) and a float32/float64 type."""
    k, s, d, pd = geom
    return (C is not None and len(k) == 2 and tuple(k) == (3, 3) and tuple(s) == (1, 1)
            and tuple(d) == (1, 1) and max(pd) <= 2 and p["num_group"] == 1 and np.dtype(dtype) in DTYPES
            and min(x_shape[1], w_shape[0]) >= MIN_CHANNELS and min(out_shape) >= 2)


# Elements added to the distance between the 16 matrices of U, V and M: at a distance of a large
# power of two, a tile's 16 entries would all fall in one cache set and evict each other.
SET_PAD = 16


def _sixteen(rows: int, cols: int, dtype, buf: np.ndarray = None) -> np.ndarray:
    """A ``(16, rows, cols)`` view whose matrices lie ``rows * cols + SET_PAD`` elements apart
    (in ``buf`` when given, a flat buffer at least ``16 * that`` long)."""
    step = rows * cols + SET_PAD
    if buf is None:
        buf = np.empty(16 * step, dtype=dtype)
    return buf[:16 * step].reshape(16, step)[:, :rows * cols].reshape(16, rows, cols)


def weight_tiles(w: np.ndarray, flip: bool = False) -> np.ndarray:
    """``U = G g G^T`` for every filter ``g = w[f, c]`` (``flip``: ``w[c, f]`` turned by 180
    degrees): ``(16, F, C)``, entry ``k`` row-major; over the operator threads by filter ranges."""
    w = np.ascontiguousarray(w)
    f, c = (w.shape[1], w.shape[0]) if flip else w.shape[:2]
    u = _sixteen(f, c, w.dtype)
    parallel.parallel_for(f, lambda lo, hi: C.weight_tiles(w, u, int(flip), lo, hi), work_per_item=16 * c)
    return u


def conv3x3(x: np.ndarray, w: np.ndarray, bias, pad, out: np.ndarray, req: str, flip: bool = False) -> None:
    """``out (req)= Convolution(x, w, bias)`` for a 3x3 stride-1 filter with padding ``pad``
    (``flip``: the filter ``w[c, f]`` turned by 180 degrees, see ``weight_tiles``)."""
    n, c = x.shape[:2]
    f, (oh, ow) = out.shape[1], out.shape[2:]
    th, tw = (oh + 1) // 2, (ow + 1) // 2
    x = np.ascontiguousarray(x)
    u = weight_tiles(np.asarray(w, dtype=x.dtype), flip)
    direct = req == "write" and out.flags.c_contiguous and out.dtype == x.dtype
    res = out if direct else np.empty(out.shape, dtype=x.dtype)
    b = np.ascontiguousarray(bias, dtype=x.dtype) if bias is not None else np.zeros(1, dtype=x.dtype)
    per = th * tw
    # Samples per chunk, or for large images (more than CHUNK_TILES tiles each) tile rows.
    chunk = max(1, min(-(-CHUNK_TILES // per), -(-n // parallel.NUM_THREADS)))
    rows = th if per <= CHUNK_TILES else max(1, CHUNK_TILES // tw)

    def run(lo, hi):
        tiles = min(chunk, hi - lo) * min(rows, th) * tw
        vbuf = np.empty(16 * (c * tiles + SET_PAD), dtype=x.dtype)
        mbuf = np.empty(16 * (f * tiles + SET_PAD), dtype=x.dtype)
        for a in range(lo, hi, chunk):
            e = min(hi, a + chunk)
            for r0 in range(0, th, rows):
                r1 = min(th, r0 + rows)
                t = (e - a) * (r1 - r0) * tw
                v, m = _sixteen(c, t, x.dtype, vbuf), _sixteen(f, t, x.dtype, mbuf)
                C.input_tiles(x, v, pad[0], pad[1], r0, r1, tw, a, e)
                np.matmul(u, v, out=m)
                C.output_tiles(m, res, b, int(bias is not None), r0, r1, tw, a, e)
    parallel.parallel_for(n, run, work_per_item=16 * per * c * f)
    if not direct:
        assign(out, req, res)


def data_grad(og: np.ndarray, w: np.ndarray, pad, dx: np.ndarray, req: str) -> None:
    """``dx (req)=`` the data gradient of a 3x3 stride-1 Convolution with padding ``pad``: the
    forward of the transposed, flipped filter with padding ``2 - pad``."""
    conv3x3(og, w, None, (2 - pad[0], 2 - pad[1]), dx, req, flip=True)
