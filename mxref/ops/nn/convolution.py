"""Convolution (1-D, 2-D, 3-D; stride, pad, dilate, num_group) as im2col + one GEMM per group.

Math (cross-correlation, NC(D)(H)W layout, ``G`` groups; ``col`` is ``im2col(pad(data))`` with rows
``(c, k)`` and columns ``(n, o)``; ``W_g`` is group g's weight as a ``(F/G, C/G * prod(kernel))``
matrix; ``dout_g`` is ``(F/G, N * prod(out))``)::

    out[n, f, o] = sum_{c, k} W[f, c, k] * data[n, g*C/G + c, o*stride + k*dilate - pad] + bias[f]
    out_g  = W_g @ col_g             dW_g = dout_g @ col_g^T        dbias = sum_{n, o} dout
    dcol_g = W_g^T @ dout_g          ddata = col2im(dcol)

The data gradient's columns are produced kernel-offset-major, so col2im adds contiguous blocks.
A pointwise convolution (kernel 1, stride 1, no padding) has the data itself as its columns: it
runs as batched GEMMs on ``(N, C, O)`` views, with no column matrix and no col2im.

Backward dependencies: ``_backward_Convolution`` takes ``(ograd, data, weight)`` and recomputes the
columns from ``data`` rather than keeping them (MXNet does the same, in its workspace).

Kernels: ``forward``/``backward`` with numpy's im2col/col2im are the reference; the 'cpu' fast
kernels (registered at the end) are the same functions given the C loops of ``im2col.C``, except
for depthwise filters (``C / num_group == 1``, MobileNet's), which C loops apply directly, and
the forward of 1x1 filters, one GEMM per sample with no columns, and the forward of large
outputs (>= 16 positions), columns and GEMM per sample straight into the output; 3x3
stride-1 filters (forward and data gradient) run Winograd F(2x2, 3x3) (``winograd.py``), and taps
that read only padding are cut off first. No second derivative (``_backward_Convolution`` has no
gradient).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..parallel import parallel_for, parallel_matmul
from ..registry import OpDef, Param, assign, register, register_kernel
from . import im2col, winograd
from ._util import backward_node, merge_shape, out_entries, uniform_type
from .im2col import out_size

PARAMS = {
    "kernel": Param("shape", doc="Convolution kernel size: (w,), (h, w) or (d, h, w)."),
    "stride": Param("shape", (), doc="Stride per spatial axis; defaults to 1."),
    "dilate": Param("shape", (), doc="Dilation per spatial axis; defaults to 1."),
    "pad": Param("shape", (), doc="Zero padding per spatial axis; defaults to 0."),
    "num_filter": Param("int", doc="Number of output channels."),
    "num_group": Param("int", 1, doc="Number of groups partitioning the channels."),
    "workspace": Param("int", 1024, doc="Workspace limit in MB (unused on CPU)."),
    "no_bias": Param("bool", False, doc="Whether to disable the bias parameter."),
    "cudnn_tune": Param("any", None, doc="cuDNN algorithm choice (ignored: no cuDNN)."),
    "cudnn_off": Param("bool", False, doc="Turn off cuDNN (ignored)."),
    "layout": Param("any", None, doc="Data layout; only channel-first layouts are supported."),
}


def geometry(op: str, p: dict):
    """``(kernel, stride, dilate, pad)`` with MXNet's defaults filled in; validated."""
    k = p["kernel"]
    if not 1 <= len(k) <= 3:
        raise MXNetError(f"{op}: kernel must have 1, 2 or 3 dimensions, got {k}")
    nd = len(k)
    s, d, pd = p["stride"] or (1,) * nd, p["dilate"] or (1,) * nd, p["pad"] or (0,) * nd
    for name, v in (("stride", s), ("dilate", d), ("pad", pd)):
        if len(v) != nd:
            raise MXNetError(f"{op}: {name} {v} must have as many dimensions as kernel {k}")
    if min(k + s + d) < 1 or min(pd) < 0:
        raise MXNetError(f"{op}: kernel, stride and dilate must be positive and pad non-negative")
    return k, s, d, pd


def _arguments(p):
    return ["data", "weight"] if p["no_bias"] else ["data", "weight", "bias"]


def _data_from_output(p, data, out):
    """A known output fills the data back in (MXNet's ConvolutionShape): the batch size always, a
    spatial size where the stride is 1 (``x = o + d (k - 1) - 2 pad``)."""
    k, s, d, pd = geometry("Convolution", p)
    if len(out) != 2 + len(k) or (data is not None and len(data) != len(out)):
        return data
    data = list(data) if data is not None else [0] * len(out)
    data[0] = data[0] or out[0]
    for i, (o, kk, ss, dd, pp) in enumerate(zip(out[2:], k, s, d, pd)):
        if not data[2 + i] and o and ss == 1:
            data[2 + i] = o + dd * (kk - 1) - 2 * pp
    return tuple(data)


def infer_shape(p, in_shapes, out_shapes=None):
    k, s, d, pd = geometry("Convolution", p)
    data, f, g = in_shapes[0], p["num_filter"], p["num_group"]
    ins = list(in_shapes)
    if out_shapes and out_shapes[0] is not None and (data is None or 0 in data):
        data = ins[0] = _data_from_output(p, data, out_shapes[0])
    if data is None:
        return ins, [None]
    if len(data) != 2 + len(k):
        raise MXNetError(f"Convolution: data must be {2 + len(k)}-D for kernel {k}, got shape {data}")
    if data[1] % g or f % g:
        raise MXNetError(f"Convolution: channels {data[1]} and num_filter {f} must divide by num_group {g}")
    # An unknown channel count (0) stays unknown in the weight: (num_filter, 0, *kernel), as MXNet.
    ins[1] = merge_shape("Convolution", "weight", ins[1], (f, data[1] // g) + tuple(k))
    if not p["no_bias"]:
        ins[2] = merge_shape("Convolution", "bias", ins[2], (f,))
    spatial = tuple(out_size("Convolution", x, *a) if x else 0 for x, *a in zip(data[2:], k, s, pd, d))
    return ins, [(data[0], f) + spatial]


def _group_weights(w, g):
    """``(G, F/G, C/G * K)`` and, kernel-major for the data gradient, ``(G, K * C/G, F/G)``."""
    f, cg = w.shape[:2]
    w3 = w.reshape(g, f // g, cg, -1)
    return w3.reshape(g, f // g, -1), w3.transpose(0, 3, 2, 1).reshape(g, -1, f // g)


def _pointwise(k, s, pd) -> bool:
    """A kernel of 1 with stride 1 and no padding: the columns would be a copy of the data."""
    return all(v == 1 for v in k + s) and not any(pd)


def _pointwise_forward(p, x, w, bias, out, req):
    """``out[n] = W @ data[n] (+ bias)`` per group, straight into ``out`` when writing."""
    (n, c), f, g = x.shape[:2], out.shape[1], p["num_group"]
    cg, fg = c // g, f // g
    x3, out3, w2 = x.reshape(n, c, -1), out.reshape(n, f, -1), w.reshape(f, cg)
    res = out3 if req == "write" else np.empty(out3.shape, dtype=out.dtype)
    for i in range(g):
        np.matmul(w2[i * fg:(i + 1) * fg], x3[:, i * cg:(i + 1) * cg], out=res[:, i * fg:(i + 1) * fg])
    if bias is not None:
        res += bias[:, None]
    if res is not out3:
        assign(out3, req, res)


def _pointwise_backward(p, og, x, w, outputs, req):
    """``dW = sum_n dout[n] @ data[n]^T``, ``ddata[n] = W^T @ dout[n]``, ``dbias = sum dout``, per group."""
    (n, c), f, g = x.shape[:2], og.shape[1], p["num_group"]
    cg, fg = c // g, f // g
    x3, og3, w2 = x.reshape(n, c, -1), og.reshape(n, f, -1), w.reshape(f, cg)
    if req[1] != "null":
        dw = np.empty((f, cg), dtype=og.dtype)
        for i in range(g):
            xg = x3[:, i * cg:(i + 1) * cg].swapaxes(1, 2)
            dw[i * fg:(i + 1) * fg] = np.matmul(og3[:, i * fg:(i + 1) * fg], xg).sum(axis=0)
        assign(outputs[1], req[1], dw.reshape(w.shape))
    if req[0] != "null":
        dx3 = outputs[0].reshape(x3.shape) if req[0] == "write" else np.empty(x3.shape, dtype=og.dtype)
        for i in range(g):
            np.matmul(w2[i * fg:(i + 1) * fg].T, og3[:, i * fg:(i + 1) * fg], out=dx3[:, i * cg:(i + 1) * cg])
        if req[0] != "write":
            assign(outputs[0], req[0], dx3.reshape(x.shape))
    if not p["no_bias"]:
        assign(outputs[2], req[2], og3.sum(axis=(0, 2)))


def forward(octx, p, inputs, outputs, req, columns=im2col.conv_columns):
    k, s, d, pd = geometry("Convolution", p)
    x, w, out, g = inputs[0], inputs[1], outputs[0], p["num_group"]
    if _pointwise(k, s, pd):
        return _pointwise_forward(p, x, w, None if p["no_bias"] else inputs[2], out, req[0])
    cols = columns(x, k, s, d, pd, out.shape[2:])  # (C*K, N*O)
    n, f = out.shape[:2]
    w2, ckg, fg = _group_weights(w, g)[0], cols.shape[0] // g, f // g
    res = np.empty((f, cols.shape[1]), dtype=out.dtype)
    for i in range(g):  # one GEMM per group (one in total for the usual num_group=1)
        parallel_matmul(w2[i], cols[i * ckg:(i + 1) * ckg], out=res[i * fg:(i + 1) * fg])
    # (F, N, O) -> (N, F, O), plus the bias, a range of samples per operator thread.
    res3, out3 = res.reshape(f, n, -1), out.reshape(n, f, -1)
    bias = None if p["no_bias"] else inputs[2][:, None]

    def put(lo, hi):
        part = res3[:, lo:hi].swapaxes(0, 1)
        if bias is not None:
            part += bias
        assign(out3[lo:hi], req[0], part)
    parallel_for(n, put, work_per_item=res3[:, 0].size)


def backward(octx, p, inputs, outputs, req, columns=im2col.conv_columns, col2im=im2col.conv_col2im):
    k, s, d, pd = geometry("Convolution", p)
    og, x, w, g = inputs[0], inputs[1], inputs[2], p["num_group"]
    if _pointwise(k, s, pd):
        return _pointwise_backward(p, og, x, w, outputs, req)
    n, f = og.shape[:2]
    og3 = og.reshape(n, f, -1)
    og_f = np.empty((f, og3.shape[0] * og3.shape[2]), dtype=og.dtype)  # (F, N*O)
    og_f3 = og_f.reshape(f, n, -1)
    parallel_for(n, lambda lo, hi: np.copyto(og_f3[:, lo:hi], og3[lo:hi].swapaxes(0, 1)),
                 work_per_item=og3[0].size)
    w2, wk = _group_weights(w, g)
    fg, ckg = f // g, w2.shape[2]
    if req[1] != "null":
        cols = columns(x, k, s, d, pd, og.shape[2:])
        dw = np.empty((g, fg, ckg), dtype=og.dtype)
        for i in range(g):
            parallel_matmul(og_f[i * fg:(i + 1) * fg], cols[i * ckg:(i + 1) * ckg].T, out=dw[i])
        assign(outputs[1], req[1], dw.reshape(w.shape))
    if req[0] != "null":
        kk, cg = int(np.prod(k)), w.shape[1]
        dcols = np.empty((kk, g * cg, og_f.shape[1]), dtype=og.dtype)  # (K, C, N*O)
        if g == 1:      # one 2-D GEMM, which the operator threads can split
            parallel_matmul(wk[0], og_f, out=dcols.reshape(kk * cg, -1))
        else:
            for i in range(g):
                np.matmul(wk[i].reshape(kk, cg, fg), og_f[i * fg:(i + 1) * fg],
                          out=dcols[:, i * cg:(i + 1) * cg])
        assign(outputs[0], req[0], col2im(dcols, x.shape, k, s, d, pd, og.shape[2:]))
    if not p["no_bias"]:
        assign(outputs[2], req[2], og_f.sum(axis=1))


def backward_shape(p, in_shapes):
    og, data, w = in_shapes
    return list(in_shapes), [data, w] + ([] if p["no_bias"] else [None if w is None else (w[0],)])


def gradient(node, ograds):
    bwd = backward_node(node, "_backward_Convolution", [ograds[0], node.inputs[0], node.inputs[1]])
    return out_entries(bwd, 2 if node.params["no_bias"] else 3)


def check_layout(op: str, p: dict) -> None:
    if p["layout"] not in (None, "None", "NCW", "NCHW", "NCDHW"):
        raise MXNetError(f"{op}: layout {p['layout']!r} is not supported (channel-first layouts only)")


def _validate(p):
    geometry("Convolution", p)
    check_layout("Convolution", p)
    if p["num_filter"] <= 0 or p["num_group"] <= 0:
        raise MXNetError("Convolution: num_filter and num_group must be positive")


register(OpDef("Convolution", forward, arguments=_arguments, params=PARAMS, infer_shape=infer_shape,
               infer_type=uniform_type(1), gradient=gradient, validate=_validate, doc=__doc__))
register(OpDef("_backward_Convolution", backward, arguments=["ograd", "data", "weight"],
               outputs=_arguments, params=PARAMS, infer_shape=backward_shape,
               infer_type=uniform_type(lambda p: 2 if p["no_bias"] else 3)))

# Fast kernels: the same forward and backward around the C im2col / col2im loops (``im2col.C``),
# which give the numpy functions' bits. The results have matched bit for bit wherever tested, but
# they go through BLAS GEMMs on other buffers, so what the kernels promise is a tolerance.
def _c_takes_forward(p, inputs, outputs, req) -> bool:
    return im2col.c_takes(inputs[0])


def _c_takes_backward(p, inputs, outputs, req) -> bool:
    return im2col.c_takes(inputs[1]) and im2col.c_takes(inputs[0])      # data, then ograd


def _live_taps(p, geom, in_sp, out_sp):
    """``(params, weight slice)`` of the kernel cut down to its taps that read at least one input
    pixel, or ``None`` when all do. The others multiply only padding, so their terms are zeros:
    a 3x3 filter over a 1x1 input (ResNet's last stage at 32x32) is its centre tap, a 1x1
    convolution. The live taps of an axis are a contiguous range; the cut moves the padding."""
    k, s, d, pd = geom
    if not any(pd):
        return None
    lo, hi = [], []
    for kk, ss, dd, pp, n_in, n_out in zip(k, s, d, pd, in_sp, out_sp):
        live = []
        for ki in range(kk):
            off = ki * dd - pp              # input position of output 0; output o reads o*ss + off
            first = -(off // ss) if off < 0 else 0
            last = (n_in - 1 - off) // ss + 1 if n_in - 1 - off >= 0 else 0
            if min(last, n_out) > first:
                live.append(ki)
        if not live:
            return None
        lo.append(live[0])
        hi.append(live[-1] + 1)
    if all(a == 0 and b == kk for a, b, kk in zip(lo, hi, k)) or \
            any(a * dd > pp for a, dd, pp in zip(lo, d, pd)):
        return None
    p2 = dict(p, kernel=tuple(b - a for a, b in zip(lo, hi)),
              pad=tuple(pp - a * dd for a, dd, pp in zip(lo, d, pd)))
    return p2, (slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))


def _c_forward(octx, p, inputs, outputs, req):
    """3x3 stride-1 filters by Winograd F(2x2, 3x3) (``winograd.py``), depthwise filters (one
    input channel per group) in C loops, 1x1 filters as one GEMM per sample, large outputs as
    im2col + GEMM per sample, else im2col in C + one GEMM for the batch."""
    geom = geometry("Convolution", p)
    x, w, out = inputs[0], inputs[1], outputs[0]
    cut = _live_taps(p, geom, x.shape[2:], out.shape[2:])
    if cut is not None:
        return _c_forward(octx, cut[0], [x, np.ascontiguousarray(w[cut[1]])] + list(inputs[2:]),
                          outputs, req)
    if winograd.applies(p, geom, x.shape, w.shape, out.shape[2:], x.dtype):
        winograd.conv3x3(x, w, None if p["no_bias"] else inputs[2], geom[3], out, req[0])
    elif im2col.depthwise(p, inputs[0]):
        im2col.c_depthwise(p, inputs, outputs, req, geom)
    elif im2col.pointwise(p, *geom[:2], geom[3]):
        im2col.pointwise_forward(p, inputs, outputs, req)
    elif im2col.per_sample(p, inputs[0], outputs[0].shape[2:]):
        im2col.per_sample_forward(p, inputs, outputs, req, geom)
    else:
        forward(octx, p, inputs, outputs, req, columns=im2col.c_conv_columns)


def _c_pointwise_backward_small(p, inputs, outputs, req):
    """A 1x1 Convolution's gradients over small outputs as whole-batch GEMMs on ``(channels,
    N*O)`` matrices (per-sample products of a few columns would run at matrix-vector speed)."""
    og, x, w = inputs
    (n, c), f = x.shape[:2], og.shape[1]
    og_f = np.ascontiguousarray(og.reshape(n, f, -1).swapaxes(0, 1)).reshape(f, -1)
    if req[1] != "null":
        x_f = np.ascontiguousarray(x.reshape(n, c, -1).swapaxes(0, 1)).reshape(c, -1)
        assign(outputs[1], req[1], parallel_matmul(og_f, x_f.T, np.empty((f, c), og.dtype)).reshape(w.shape))
    if req[0] != "null":
        dx_f = parallel_matmul(w.reshape(f, c).T, og_f, np.empty((c, og_f.shape[1]), og.dtype))
        assign(outputs[0], req[0], dx_f.reshape(c, n, -1).swapaxes(0, 1).reshape(x.shape))
    if not p["no_bias"]:
        assign(outputs[2], req[2], og_f.sum(axis=1))


def _c_backward(octx, p, inputs, outputs, req):
    """Depthwise filters in C loops; else im2col/col2im in C + GEMMs, the data gradient of 3x3
    stride-1 filters by Winograd (a 3x3 stride-1 convolution of ``dout`` itself)."""
    geom = geometry("Convolution", p)
    og, x, w = inputs
    cut = _live_taps(p, geom, x.shape[2:], og.shape[2:])
    if cut is not None:     # the cut-off taps' weight gradient is 0
        wc = np.ascontiguousarray(w[cut[1]])
        dwc = np.empty(wc.shape, dtype=og.dtype)
        _c_backward(octx, cut[0], [og, x, wc], [outputs[0], dwc] + list(outputs[2:]),
                    [req[0], "write" if req[1] != "null" else "null"] + list(req[2:]))
        if req[1] != "null":
            dw = np.zeros(w.shape, dtype=og.dtype)
            dw[cut[1]] = dwc
            assign(outputs[1], req[1], dw)
        return None
    if im2col.depthwise(p, x):
        return im2col.c_depthwise_backward(p, inputs, outputs, req, geom)
    if im2col.pointwise(p, *geom[:2], geom[3]):
        if im2col.per_sample(p, x, og.shape[2:]):
            return im2col.pointwise_backward(p, inputs, outputs, req)
        return _c_pointwise_backward_small(p, inputs, outputs, req)
    if req[0] != "null" and winograd.applies(p, geom, og.shape, w.shape[1::-1], x.shape[2:], og.dtype):
        winograd.data_grad(og, w, geom[3], outputs[0], req[0])
        req = ["null"] + list(req[1:])
        if all(r == "null" for r in req):
            return None
    backward(octx, p, inputs, outputs, req, columns=im2col.c_conv_columns, col2im=im2col.c_conv_col2im)


if im2col.C is not None:
    # float32 1e-4: Winograd's transforms round differently from im2col's dot products.
    _TOL = winograd.TOL
    register_kernel("Convolution", "cpu", _c_forward, applies=_c_takes_forward,
                    name="nn_kernels.im2col_2d + GEMM | depthwise_2d | winograd 3x3", exact=False, tol=_TOL)
    register_kernel("_backward_Convolution", "cpu", _c_backward, applies=_c_takes_backward,
                    name="nn_kernels.im2col_2d/col2im_2d + GEMM | depthwise_2d_backward | winograd 3x3",
                    exact=False, tol=_TOL)
