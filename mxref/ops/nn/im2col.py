"""im2col / col2im for N-d (1-D, 2-D, 3-D) windows, shared by Convolution, Deconvolution and Pooling.

``im2col`` turns every output position's receptive field into one row, so a convolution is a
single GEMM; it is a strided *view* of the padded input (``as_strided``) copied once into a matrix.
``col2im`` is its adjoint: it adds the rows back into the input, with one vectorised add per kernel
offset (``prod(kernel)`` numpy adds), never a Python loop over pixels.
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..._ext import loader
from ...base import MXNetError
from ..parallel import parallel_for, parallel_matmul
from ..registry import assign


def out_size(op: str, size: int, k: int, s: int, p: int, d: int, full: bool = False) -> int:
    """Output length of a window sweep; ``full`` rounds up (Pooling's 'full' convention)."""
    span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        raise MXNetError(f"{op}: kernel {k} (dilate {d}) is larger than the padded input {size + 2 * p}")
    return (-(-span // s) if full else span // s) + 1


def pad_spatial(x: np.ndarray, pad: Sequence[int], value=0.0, extra: Sequence[int] = None) -> np.ndarray:
    """``x`` with ``pad`` (plus ``extra`` at the end) added around every spatial axis (2 onwards)."""
    extra = extra or [0] * len(pad)
    if not any(pad) and not any(extra):
        return x
    widths = [(0, 0), (0, 0)] + [(p, p + e) for p, e in zip(pad, extra)]
    return np.pad(x, widths, mode="constant", constant_values=value)


def window_view(xp: np.ndarray, kernel, stride, dilate, out_shape) -> np.ndarray:
    """A read-only view ``(N, C, *out_shape, *kernel)`` of the padded input ``xp``."""
    sp = xp.strides[2:]
    shape = xp.shape[:2] + tuple(out_shape) + tuple(kernel)
    strides = xp.strides[:2] + tuple(a * s for a, s in zip(sp, stride)) + \
        tuple(a * d for a, d in zip(sp, dilate))
    return as_strided(xp, shape, strides, writeable=False)


def im2col(xp: np.ndarray, kernel, stride, dilate, out_shape) -> np.ndarray:
    """Rows ``(n, *o)``, columns ``(c, *k)``: the ``(N * prod(out), C * prod(kernel))`` matrix."""
    nd = len(kernel)
    win = window_view(xp, kernel, stride, dilate, out_shape)
    # (N, C, *O, *K) -> (N, *O, C, *K): one copy, then a free reshape.
    order = (0,) + tuple(range(2, 2 + nd)) + (1,) + tuple(range(2 + nd, 2 + 2 * nd))
    rows = xp.shape[0] * int(np.prod(out_shape))
    return np.ascontiguousarray(win.transpose(order)).reshape(rows, -1)


def scatter_windows(dxp: np.ndarray, value, kernel, stride, dilate, out_shape) -> None:
    """``dxp[window(o) + k] += value(k)[o]`` for every kernel offset ``k``: one numpy add per offset.

    ``value(kpos)`` returns an ``(N, C, *out_shape)`` block (or something broadcasting to it).
    """
    for kpos in np.ndindex(*kernel):
        idx = tuple(slice(k * d, k * d + s * (o - 1) + 1, s)
                    for k, d, s, o in zip(kpos, dilate, stride, out_shape))
        dxp[(slice(None), slice(None)) + idx] += value(kpos)


def crop_spatial(xp: np.ndarray, pad: Sequence[int], extra: Sequence[int] = None) -> np.ndarray:
    """Undo ``pad_spatial``: the interior of ``xp`` (a view)."""
    extra = extra or [0] * len(pad)
    if not any(pad) and not any(extra):
        return xp
    return xp[(slice(None), slice(None)) + tuple(slice(p, size - p - e) for p, e, size
                                                 in zip(pad, extra, xp.shape[2:]))]


def col2im(cols: np.ndarray, padded_shape: Tuple[int, ...], kernel, stride, dilate, out_shape,
           pad: Sequence[int], dtype=None) -> np.ndarray:
    """Adjoint of ``im2col``: sum the rows of ``cols`` back into an unpadded input-shaped array.

    ``cols`` is ``(N * prod(out), C * prod(kernel))`` (as im2col returns) or already shaped
    ``(N, *out, C, *kernel)``.
    """
    nd = len(kernel)
    n, c = padded_shape[:2]
    cols = cols.reshape((n,) + tuple(out_shape) + (c,) + tuple(kernel))
    # (N, *O, C, *K) -> (N, C, *K, *O) view so each kernel offset is one (N, C, *O) block.
    order = (0, 1 + nd) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(1, 1 + nd))
    blocks = cols.transpose(order)
    dx = np.zeros(padded_shape, dtype=dtype or cols.dtype)
    scatter_windows(dx, lambda kpos: blocks[(slice(None), slice(None)) + kpos], kernel, stride, dilate,
                    out_shape)
    return crop_spatial(dx, pad)


def im2col_t(xp: np.ndarray, kernel, stride, dilate, out_shape) -> np.ndarray:
    """The transposed column matrix ``(C * prod(kernel), N * prod(out))``: rows ``(c, *k)``,
    columns ``(n, *o)``. Convolution uses this layout: its GEMMs then need no transposed copies."""
    nd = len(kernel)
    win = window_view(xp, kernel, stride, dilate, out_shape)
    order = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd))
    rows = xp.shape[1] * int(np.prod(kernel))
    return np.ascontiguousarray(win.transpose(order)).reshape(rows, -1)


def col2im_kc(dcols: np.ndarray, padded_shape: Tuple[int, ...], kernel, stride, dilate, out_shape,
              pad: Sequence[int]) -> np.ndarray:
    """Adjoint of ``im2col`` for columns laid out ``(prod(kernel), C, N, *out)`` (kernel-major).

    Each kernel offset is then one contiguous ``(C, N, *out)`` block, added into a channel-major
    ``(C, N, *padded)`` buffer; one transposed copy at the end gives ``(N, C, *spatial)``.
    """
    n, c = padded_shape[:2]
    blocks = dcols.reshape((-1, c, n) + tuple(out_shape))
    dxt = np.zeros((c, n) + tuple(padded_shape[2:]), dtype=dcols.dtype)
    offsets = {kpos: i for i, kpos in enumerate(np.ndindex(*kernel))}
    scatter_windows(dxt, lambda kpos: blocks[offsets[kpos]], kernel, stride, dilate, out_shape)
    return crop_spatial(dxt, pad).swapaxes(0, 1)


def conv_columns(x: np.ndarray, kernel, stride, dilate, pad, out_shape) -> np.ndarray:
    """``im2col_t(pad_spatial(x, pad), ...)``: the ``(C * prod(kernel), N * prod(out))`` matrix."""
    return im2col_t(pad_spatial(x, pad), kernel, stride, dilate, out_shape)


def conv_col2im(dcols: np.ndarray, x_shape, kernel, stride, dilate, pad, out_shape) -> np.ndarray:
    """The data gradient ``(N, C, *spatial)`` from kernel-major columns ``(prod(kernel), C, N*out)``
    (``col2im_kc`` on the padded shape, then cropped)."""
    padded = tuple(x_shape[:2]) + tuple(a + 2 * p for a, p in zip(x_shape[2:], pad))
    return col2im_kc(dcols, padded, kernel, stride, dilate, out_shape, pad)


# ---------------------------------------------------------------------------------------------
# Fast kernels: the C loops of ``mxref/_ext/nn_kernels.pyx`` over batch ranges on
# ``parallel_for``'s threads, for 1-D and 2-D windows of float32/float64 data (``C_DTYPES``).
# Convolution and Pooling register them as 'cpu' kernels; the numpy functions above are the
# reference (and the only path for 3-D windows, float16 and every other layout).
# ---------------------------------------------------------------------------------------------
C = loader.load("nn_kernels", "Convolution/Pooling window kernels")
_HAS_NLAST = hasattr(C, "depthwise_2d_nlast")
C_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def c_takes(x: np.ndarray) -> bool:
    """Whether the C loops take windows over ``x`` (``(N, C, *spatial)``)."""
    return 3 <= x.ndim <= 4 and x.dtype in C_DTYPES


def as_2d(shape: Tuple[int, ...], nd: int) -> Tuple[int, ...]:
    """An ``(N, C, *spatial)`` shape with 1-D windows viewed as 2-D ones of height 1."""
    return tuple(shape) if nd == 2 else tuple(shape[:2]) + (1,) + tuple(shape[2:])


def c_conv_columns(x: np.ndarray, kernel, stride, dilate, pad, out_shape) -> np.ndarray:
    """``conv_columns`` in C (``im2col_2d``): the same matrix, the same bits."""
    nd = len(kernel)
    x4 = np.ascontiguousarray(x).reshape(as_2d(x.shape, nd))
    kh, kw, sh, sw, dh, dw, ph, pw, oh, ow = geometry_2d(kernel, stride, dilate, pad, out_shape)
    n, c = x.shape[:2]
    cols = np.empty((c * kh * kw, n * oh * ow), dtype=x.dtype)
    parallel_for(n, lambda lo, hi: C.im2col_2d(x4, cols, kh, kw, sh, sw, dh, dw, ph, pw, oh, ow, lo, hi),
                 work_per_item=c * kh * kw * oh * ow)
    return cols


def c_conv_col2im(dcols: np.ndarray, x_shape, kernel, stride, dilate, pad, out_shape) -> np.ndarray:
    """``conv_col2im`` in C (``col2im_2d``), adding in the same kernel-offset order."""
    nd = len(kernel)
    kh, kw, sh, sw, dh, dw, ph, pw, oh, ow = geometry_2d(kernel, stride, dilate, pad, out_shape)
    n, c = x_shape[:2]
    dx = np.empty(as_2d(x_shape, nd), dtype=dcols.dtype)
    d3 = np.ascontiguousarray(dcols).reshape(kh * kw, c, -1)
    parallel_for(n, lambda lo, hi: C.col2im_2d(d3, dx, kh, kw, sh, sw, dh, dw, ph, pw, oh, ow, lo, hi),
                 work_per_item=c * kh * kw * oh * ow)
    return dx.reshape(x_shape)


def geometry_2d(kernel, stride, dilate, pad, out_shape) -> Tuple[int, ...]:
    """``(kh, kw, sh, sw, dh, dw, ph, pw, oh, ow)`` for the C kernels: a 1-D window is a 2-D one of
    height 1 (kernel, stride, dilate and output 1, pad 0)."""
    if len(kernel) == 2:
        return (*kernel, *stride, *dilate, *pad, *out_shape)
    return (1, kernel[0], 1, stride[0], 1, dilate[0], 0, pad[0], 1, out_shape[0])


def depthwise(p: dict, x: np.ndarray) -> bool:
    """Whether a Convolution is depthwise (each group reads one input channel), which
    ``c_depthwise`` runs without columns (one GEMM of one row per group would be slow)."""
    return p["num_group"] > 1 and x.shape[1] == p["num_group"]


# The batch-innermost depthwise loops (``depthwise_2d_nlast``) win from a batch of this many samples
# with output rows up to this wide (a CIFAR-sized MobileNet); wider rows vectorise along the row.
BATCH_INNER_MIN_N = 4
BATCH_INNER_MAX_WIDTH = 16


def batch_inner(n: int, out_width: int) -> bool:
    """Whether a depthwise Convolution of ``n`` samples runs its taps along the batch (an
    nn_kernels built before those loops existed keeps the row loops until it is rebuilt)."""
    return n >= BATCH_INNER_MIN_N and out_width <= BATCH_INNER_MAX_WIDTH and _HAS_NLAST


def c_depthwise(p, inputs, outputs, req, geom) -> None:
    """Convolution's forward for depthwise filters: ``depthwise_2d`` over output channel ranges."""
    k, s, d, pd = geom
    x, w, nd = inputs[0], inputs[1], len(k)
    _, _, sh, sw, dh, dw, ph, pw, _, _ = geometry_2d(k, s, d, pd, outputs[0].shape[2:])
    x4, w4 = (np.ascontiguousarray(a).reshape(as_2d(a.shape, nd)) for a in (x, w))
    direct = req[0] == "write" and outputs[0].flags.c_contiguous
    out = outputs[0] if direct else np.empty(outputs[0].shape, dtype=x.dtype)
    out4 = out.reshape(as_2d(out.shape, nd))
    kernel = C.depthwise_2d_nlast if batch_inner(x4.shape[0], out4.shape[3]) else C.depthwise_2d
    parallel_for(out4.shape[1], lambda lo, hi: kernel(x4, w4, out4, sh, sw, dh, dw, ph, pw, lo, hi),
                 work_per_item=out4[:, 0].size * w4[0].size)
    if not p["no_bias"]:
        out4 += inputs[2].reshape(1, -1, 1, 1)
    if not direct:
        assign(outputs[0], req[0], out)


def c_depthwise_backward(p, inputs, outputs, req, geom) -> None:
    """The data, weight and bias gradients of a depthwise Convolution (``depthwise_2d_backward``
    over input channel ranges)."""
    k, s, d, pd = geom
    og, x, w, nd = inputs[0], inputs[1], inputs[2], len(k)
    _, _, sh, sw, dh, dw, ph, pw, _, _ = geometry_2d(k, s, d, pd, og.shape[2:])
    og4, x4, w4 = (np.ascontiguousarray(a, dtype=x.dtype).reshape(as_2d(a.shape, nd)) for a in (og, x, w))
    # The data gradient straight into the output when it is written whole (no copy after).
    direct = req[0] == "write" and outputs[0].flags.c_contiguous and outputs[0].dtype == x.dtype
    dx = outputs[0].reshape(x4.shape) if direct else np.empty_like(x4)
    dwt = np.empty_like(w4)
    want_dx, want_dw = int(req[0] != "null"), int(req[1] != "null")
    nlast = batch_inner(x4.shape[0], og4.shape[3])
    kernel = C.depthwise_2d_backward_nlast if nlast else C.depthwise_2d_backward
    parallel_for(x4.shape[1], lambda lo, hi: kernel(
        og4, x4, w4, dx, dwt, want_dx, want_dw, sh, sw, dh, dw, ph, pw, lo, hi),
        work_per_item=2 * og4[:, 0].size * w4[0].size)
    if not direct:
        assign(outputs[0], req[0], dx.reshape(x.shape))
    assign(outputs[1], req[1], dwt.reshape(w.shape))
    if not p["no_bias"]:
        assign(outputs[2], req[2], og4.sum(axis=(0, 2, 3)))


def pointwise(p: dict, k, s, pd) -> bool:
    """A 1x1 Convolution with stride 1, no padding and one group: ``out[n] = W @ x[n]``, no columns."""
    return p["num_group"] == 1 and max(k) == 1 and max(s) == 1 and not any(pd)


def pointwise_forward(p, inputs, outputs, req) -> None:
    """Convolution's forward for ``pointwise`` filters: one GEMM per sample straight into the
    output (``(F, C) @ (C, spatial)``), a range of samples per operator thread."""
    x, w, out = inputs[0], inputs[1], outputs[0]
    n, f = out.shape[:2]
    direct = req[0] == "write" and out.flags.c_contiguous
    res = out if direct else np.empty(out.shape, dtype=x.dtype)
    x3, r3, w2 = np.ascontiguousarray(x).reshape(n, x.shape[1], -1), res.reshape(n, f, -1), w.reshape(f, -1)
    bias = None if p["no_bias"] else inputs[2].reshape(f, 1)

    def run(lo, hi):
        np.matmul(w2, x3[lo:hi], out=r3[lo:hi])
        if bias is not None:
            r3[lo:hi] += bias
    if x3.shape[2] < MIN_PER_SAMPLE_POINTWISE:
        _pointwise_forward_batch(w2, x3, r3, bias)
    else:
        parallel_for(n, run, work_per_item=w2.size * x3.shape[2])
    if not direct:
        assign(out, req[0], res)


# Below this many output positions a 1x1 filter's per-sample GEMMs, ``(F, C) @ (C, positions)``,
# run near matrix-vector speed: one GEMM over the whole batch is faster, transposes included.
MIN_PER_SAMPLE_POINTWISE = 32


def _pointwise_forward_batch(w2, x3, r3, bias) -> None:
    """``r3[n] = w2 @ x3[n] (+ bias)`` as one GEMM over the batch: ``(N, C) @ (C, F)`` straight
    into the output for one position, else ``(F, C) @ (C, N*positions)`` and a transpose back."""
    n, c, s = x3.shape
    f = w2.shape[0]
    if s == 1:
        parallel_matmul(x3.reshape(n, c), w2.T, out=r3.reshape(n, f))
    else:
        xf = np.ascontiguousarray(x3.swapaxes(0, 1)).reshape(c, n * s)
        rf = parallel_matmul(w2, xf, np.empty((f, n * s), dtype=r3.dtype))
        np.copyto(r3, rf.reshape(f, n, s).swapaxes(0, 1))
    if bias is not None:
        r3 += bias


def pointwise_backward(p, inputs, outputs, req) -> None:
    """A ``pointwise`` Convolution's gradients over large outputs on the operator threads: the
    data gradient per sample straight into the output (``W^T @ dout[n]``), the weight gradient
    by ranges of filters (``sum_n dout[n, rows] @ x[n]^T``, each filter's sum over samples in
    one order, whatever the split), the bias gradient ``sum dout``."""
    og, x, w = inputs[0], inputs[1], inputs[2]
    (n, c), f = x.shape[:2], og.shape[1]
    og3, x3 = np.ascontiguousarray(og).reshape(n, f, -1), np.ascontiguousarray(x).reshape(n, c, -1)
    w2 = w.reshape(f, c)
    if req[1] != "null":
        dw, xt = np.empty((f, c), dtype=og.dtype), x3.swapaxes(1, 2)
        parallel_for(f, lambda lo, hi: np.sum(np.matmul(og3[:, lo:hi], xt), axis=0, out=dw[lo:hi]),
                     work_per_item=x3.size)
        assign(outputs[1], req[1], dw.reshape(w.shape))
    if req[0] != "null":
        direct = req[0] == "write" and outputs[0].flags.c_contiguous and outputs[0].dtype == og.dtype
        dx3 = outputs[0].reshape(x3.shape) if direct else np.empty(x3.shape, dtype=og.dtype)
        wt = w2.T
        parallel_for(n, lambda lo, hi: np.matmul(wt, og3[lo:hi], out=dx3[lo:hi]),
                     work_per_item=w2.size * og3.shape[2])
        if not direct:
            assign(outputs[0], req[0], dx3.reshape(x.shape))
    if not p["no_bias"]:
        assign(outputs[2], req[2], og3.sum(axis=(0, 2)))


# A sample's output smaller than this (positions) goes to the whole-batch GEMM instead: per-sample
# GEMMs of a few columns would run at matrix-vector speed.
MIN_PER_SAMPLE_POSITIONS = 16


def per_sample(p: dict, x: np.ndarray, out_shape) -> bool:
    """Whether ``per_sample_forward`` takes a one-group Convolution with large outputs."""
    return p["num_group"] == 1 and math.prod(out_shape) >= MIN_PER_SAMPLE_POSITIONS


def per_sample_forward(p, inputs, outputs, req, geom) -> None:
    """Convolution's forward as MXNet's CPU code does it: per sample, ``im2col_2d`` into a
    ``(C*K, O)`` buffer that stays in cache, then one GEMM straight into ``out[n]`` (no
    ``(F, N, O)`` result to transpose); a range of samples per operator thread."""
    k, s, d, pd = geom
    x, w, out, nd = inputs[0], inputs[1], outputs[0], len(k)
    kh, kw, sh, sw, dh, dw, ph, pw, oh, ow = geometry_2d(k, s, d, pd, out.shape[2:])
    n, f = out.shape[:2]
    x4 = np.ascontiguousarray(x).reshape(as_2d(x.shape, nd))
    w2 = w.reshape(f, -1)
    direct = req[0] == "write" and out.flags.c_contiguous
    res = out if direct else np.empty(out.shape, dtype=x.dtype)
    r3 = res.reshape(n, f, -1)
    bias = None if p["no_bias"] else inputs[2].reshape(f, 1)

    def run(lo, hi):
        cols = np.empty((w2.shape[1], oh * ow), dtype=x.dtype)
        for i in range(lo, hi):
            C.im2col_2d(x4[i:i + 1], cols, kh, kw, sh, sw, dh, dw, ph, pw, oh, ow, 0, 1)
            np.matmul(w2, cols, out=r3[i])
            if bias is not None:
                r3[i] += bias
    parallel_for(n, run, work_per_item=w2.size * oh * ow)
    if not direct:
        assign(out, req[0], res)
