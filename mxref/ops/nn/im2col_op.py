"""im2col and col2im as operators (``mx.nd.im2col``, ``mx.nd.col2im``): sliding windows to columns
and back, for 1-D, 2-D and 3-D windows.

Math (``K = prod(kernel)``, ``L = prod(out)`` window positions, ``out`` as Convolution computes it)::

    im2col(x)[n, c*K + k, l] = xpad[n, c, l*stride + k*dilate]          (N, C, *spatial) -> (N, C*K, L)
    col2im(y)[n, c, i] = sum over (k, l) with l*stride + k*dilate - pad = i of y[n, c*K + k, l]

``col2im`` is the adjoint of ``im2col``, so each one's gradient is the other (``col2im`` takes the
image size as ``output_size``). A convolution is then one GEMM: ``W.reshape(F, -1) @ im2col(x)``.
Kernels: numpy, over the strided-window helpers of ``im2col.py``.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry
from .im2col import crop_spatial, out_size, pad_spatial, scatter_windows, window_view

PARAMS = {
    "kernel": Param("shape", doc="Sliding kernel size: (w,), (h, w) or (d, h, w)."),
    "stride": Param("shape", (), doc="The stride between windows; default 1 per axis."),
    "dilate": Param("shape", (), doc="The dilation of the kernel; default 1 per axis."),
    "pad": Param("shape", (), doc="The zero padding on both sides; default 0 per axis."),
}
COL2IM_PARAMS = dict(output_size=Param("shape", doc="The image's spatial size (h, w), ..."), **PARAMS)


def _geometry(op: str, p, spatial):
    """``(kernel, stride, dilate, pad, out)`` with MXNet's defaults, checked against ``spatial``."""
    k = tuple(p["kernel"])
    nd = len(k)
    if not 1 <= nd <= 3 or len(spatial) != nd:
        raise MXNetError(f"{op}: kernel {k} must have 1 to 3 dims, one per spatial axis of "
                         f"{tuple(spatial)}")
    s, d, pad = (tuple(p[n]) or (default,) * nd for n, default in (("stride", 1), ("dilate", 1), ("pad", 0)))
    if not len(s) == len(d) == len(pad) == nd:
        raise MXNetError(f"{op}: stride {s}, dilate {d} and pad {pad} must each have {nd} dims")
    out = tuple(out_size(op, n, *a) for n, a in zip(spatial, zip(k, s, pad, d)))
    return k, s, d, pad, out


def _im2col(x, p):
    k, s, d, pad, out = _geometry("im2col", p, x.shape[2:])
    win = window_view(pad_spatial(x, pad), k, s, d, out)           # (N, C, *O, *K)
    nd = len(k)
    order = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    return win.transpose(order).reshape(x.shape[0], x.shape[1] * int(np.prod(k)), int(np.prod(out)))


def _col2im(cols, p):
    k, s, d, pad, out = _geometry("col2im", p, p["output_size"])
    n, ck = cols.shape[:2]
    c = ck // int(np.prod(k))
    blocks = cols.reshape((n, c) + k + out)                          # (N, C, *K, *O)
    padded = (n, c) + tuple(a + 2 * b for a, b in zip(p["output_size"], pad))
    img = np.zeros(padded, cols.dtype)
    scatter_windows(img, lambda kpos: blocks[(slice(None), slice(None)) + kpos], k, s, d, out)
    return crop_spatial(img, pad)


def _im2col_shape(p, in_shapes):
    x = in_shapes[0]
    if x is None or 0 in x:
        return list(in_shapes), [None]
    k, _, _, _, out = _geometry("im2col", p, x[2:])
    return list(in_shapes), [(x[0], x[1] * int(np.prod(k)), int(np.prod(out)))]


def _col2im_shape(p, in_shapes):
    cols = in_shapes[0]
    if cols is None or 0 in cols:
        return list(in_shapes), [None]
    k, _, _, _, out = _geometry("col2im", p, p["output_size"])
    kk = int(np.prod(k))
    if len(cols) != 3 or cols[1] % kk or cols[2] != int(np.prod(out)):
        raise MXNetError(f"col2im: input shape {tuple(cols)} must be (N, C*{kk}, {int(np.prod(out))}) "
                         f"for kernel {k} and output_size {tuple(p['output_size'])}")
    return list(in_shapes), [(cols[0], cols[1] // kk) + tuple(p["output_size"])]


def _im2col_grad(node, ograds):
    # the data input is read for its spatial size only (ignore_inputs keeps it out of memory plans)
    return [entry(backward_node(node, "_backward_im2col", [ograds[0], node.inputs[0]]))]


def _backward_im2col(octx, p, inputs, outputs, req):
    g, x = inputs
    assign(outputs[0], req[0], _col2im(g, dict(p, output_size=x.shape[2:])))


register(OpDef("im2col", lambda octx, p, i, o, r: assign(o[0], r[0], _im2col(i[0], p)), params=PARAMS,
               infer_shape=_im2col_shape, gradient=_im2col_grad, doc=__doc__))
register(OpDef("_backward_im2col", _backward_im2col, arguments=["ograd", "data"], params=PARAMS,
               ignore_inputs=[1], infer_shape=lambda p, s: (list(s), [s[1]]),
               infer_type=lambda p, t: (list(t), [t[0]])))
register(OpDef("col2im", lambda octx, p, i, o, r: assign(o[0], r[0], _col2im(i[0], p)),
               params=COL2IM_PARAMS, infer_shape=_col2im_shape,
               gradient=lambda node, g: [entry(backward_node(node, "_backward_col2im", [g[0]]))],
               doc=__doc__))
register(OpDef("_backward_col2im", lambda octx, p, i, o, r: assign(o[0], r[0], _im2col(i[0], p)),
               arguments=["ograd"], params=COL2IM_PARAMS,
               infer_shape=lambda p, s: (list(s), [None if s[0] is None else _im2col_shape(p, s)[1][0]])))
