"""Pooling: max / avg / sum over 1-D, 2-D or 3-D windows; global pooling; 'valid' / 'full' / 'same' sizes.

Math, for window ``w(o)`` of output position ``o`` over the padded input::

    max  out[o] = max_{i in w(o)} x[i]          dx[i] = dout[o] at the (first) arg max of w(o)
    sum  out[o] = sum_{i in w(o)} x[i]          dx[i] = sum_{o : i in w(o)} dout[o]
    avg  out[o] = sum_{i in w(o)} x[i] / |w(o)|  (likewise divided)

``|w(o)|`` counts padding (``count_include_pad=True``, MXNet's default) but never positions past the
padded input, which the ``'full'`` convention (output size rounded up) can reach, and ``'same'``
(1-D, no pad: ``ceil(x / stride)`` outputs, MXNet's) too. Max pooling pads
with -inf. Forward and backward are one vectorised numpy operation per kernel offset. Backward
dependencies: ``_backward_Pooling`` takes ``(ograd, data, output)`` (as MXNet); ``global_pool``
makes the kernel the whole spatial extent. Channel-last layouts (``NWC``, ``NHWC``, ``NDHWC``) run
the same kernels on views with the channel axis moved next to the batch axis.

Kernels: the numpy ``forward``/``backward`` are the reference; max pooling over 1-D/2-D windows of
float32/float64 data registers the C loops of ``mxref/_ext/nn_kernels.pyx`` as 'cpu' kernels.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..parallel import parallel_for
from ..registry import OpDef, Param, assign, register, register_kernel
from ._util import backward_node, entry, known, uniform_type
from .im2col import C, as_2d, c_takes, crop_spatial, geometry_2d, out_size, pad_spatial

PARAMS = {
    "kernel": Param("shape", (), doc="Pooling kernel size: (w,), (h, w) or (d, h, w)."),
    "pool_type": Param("str", "max", choices=("max", "avg", "sum", "lp"), doc="Pooling type."),
    "global_pool": Param("bool", False, doc="Pool over the whole spatial extent, ignoring kernel."),
    "cudnn_off": Param("bool", False, doc="Turn off cuDNN (ignored)."),
    "pooling_convention": Param("str", "valid", choices=("full", "same", "valid"),
                                doc="'valid' floors the output size, 'full' rounds it up."),
    "stride": Param("shape", (), doc="Stride per spatial axis; defaults to 1."),
    "pad": Param("shape", (), doc="Padding per spatial axis; defaults to 0."),
    "p_value": Param("int_or_none", None, doc="Power of Lp pooling (unsupported)."),
    "count_include_pad": Param("any", None, doc="Whether avg pooling counts padding (default True)."),
    "layout": Param("any", None, doc="Data layout: NCW, NCHW, NCDHW (default) or NWC, NHWC, NDHWC."),
}


_CHANNEL_LAST = ("NWC", "NHWC", "NDHWC")


def _channel_last(kernel):
    """``kernel`` (written for channel-first arrays) run on channel-last ones through views that move
    the channel axis to position 1; outputs are written through the same views."""
    def run(octx, p, inputs, outputs, req):
        if p["layout"] not in _CHANNEL_LAST:
            return kernel(octx, p, inputs, outputs, req)
        first = [np.moveaxis(a, -1, 1) for a in inputs], [np.moveaxis(a, -1, 1) for a in outputs]
        return kernel(octx, p, *first, req)
    run.__name__, run.__doc__ = kernel.__name__, kernel.__doc__
    return run


def _validate(p):
    if p["pool_type"] == "lp":
        raise MXNetError("Pooling: pool_type 'lp' is not supported")
    if p["pooling_convention"] == "same" and any(p["pad"]):
        raise MXNetError(f"Pooling: the 'same' pooling convention disables the use of pad, got {p['pad']}")
    if p["layout"] not in (None, "None", "NCW", "NCHW", "NCDHW") + _CHANNEL_LAST:
        raise MXNetError(f"Pooling: layout {p['layout']!r} is not supported")
    if not p["global_pool"] and not 1 <= len(p["kernel"]) <= 3:
        raise MXNetError(f"Pooling: kernel must have 1, 2 or 3 dimensions, got {p['kernel']}")


def geometry(p, dshape):
    """``(kernel, stride, pad, out_shape, extra)`` for a data shape; ``extra`` pads 'full' windows."""
    if p["global_pool"]:
        k = tuple(dshape[2:])
        return k, (1,) * len(k), (0,) * len(k), (1,) * len(k), (0,) * len(k)
    k = p["kernel"]
    nd = len(k)
    s, pd = p["stride"] or (1,) * nd, p["pad"] or (0,) * nd
    if p["pooling_convention"] == "same":
        pd = (0,) * nd            # all zeros (checked): MXNet's own tests pass pad=(0, 0, 0) in 1-D
    if len(dshape) != 2 + nd or len(s) != nd or len(pd) != nd:
        raise MXNetError(f"Pooling: data shape {tuple(dshape)}, kernel {k}, stride {s} and pad {pd} "
                         "must agree in the number of spatial dimensions")
    full = p["pooling_convention"] == "full"
    if p["pooling_convention"] == "same":
        # MXNet: 1-D only, out = ceil(x / stride); the last windows stop at the input's end
        if nd != 1:
            raise MXNetError(f"Pooling: the 'same' convention supports 1-D pooling only (data of shape "
                             f"(batch, channel, x)), got data shape {tuple(dshape)}")
        out = tuple(-(-x // ss) for x, ss in zip(dshape[2:], s))
    else:
        out = tuple(out_size("Pooling", x, kk, ss, pp, 1, full)
                    for x, kk, ss, pp in zip(dshape[2:], k, s, pd))
    extra = tuple(max(0, (o - 1) * ss + kk - (x + 2 * pp))
                  for o, ss, kk, x, pp in zip(out, s, k, dshape[2:], pd))
    return k, s, pd, out, extra


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    last = p["layout"] in _CHANNEL_LAST
    if d is None or not known(d[1:-1] if last else d[2:]):
        return list(in_shapes), [None]
    if last:        # (N, *spatial, C): the geometry is the channel-first one's
        first = (d[0], d[-1]) + tuple(d[1:-1])
        return list(in_shapes), [(d[0],) + geometry(p, first)[3] + (d[-1],)]
    return list(in_shapes), [tuple(d[:2]) + geometry(p, d)[3]]


def _divisor(p, dshape, k, s, pd, out):
    """``|w(o)|`` for avg pooling, shaped to broadcast over (N, C, *out)."""
    div = np.ones((), dtype=np.float64)
    include = p["count_include_pad"] in (None, True, "True", "true", 1, "1")
    for x, kk, ss, pp, o in zip(dshape[2:], k, s, pd, out):
        start = np.arange(o) * ss
        lo, hi = (start, np.minimum(start + kk, x + 2 * pp)) if include else \
            (np.maximum(start, pp), np.minimum(start + kk, x + pp))
        div = np.multiply.outer(div, (hi - lo).astype(np.float64))
    return div


def _window_slices(kpos, stride, out):
    return (slice(None), slice(None)) + tuple(slice(k, k + st * (o - 1) + 1, st)
                                              for k, st, o in zip(kpos, stride, out))


def forward(octx, p, inputs, outputs, req):
    x, t = inputs[0], p["pool_type"]
    k, s, pd, out, extra = geometry(p, x.shape)
    xp = pad_spatial(x, pd, -np.inf if t == "max" else 0.0, extra)
    # One vectorised max/add per kernel offset: each is a strided (N, C, *out) slice of the input.
    res = None
    for kpos in np.ndindex(*k):
        win = xp[_window_slices(kpos, s, out)]
        if res is None:
            res = win.copy()
        elif t == "max":
            np.maximum(res, win, out=res)
        else:
            res += win
    if t == "avg":
        res /= _divisor(p, x.shape, k, s, pd, out).astype(res.dtype)
    assign(outputs[0], req[0], res)


def backward(octx, p, inputs, outputs, req):
    og, x, y, t = inputs[0], inputs[1], inputs[2], p["pool_type"]
    k, s, pd, out, extra = geometry(p, x.shape)
    dxp = np.zeros(tuple(x.shape[:2]) + tuple(a + 2 * b + e for a, b, e in zip(x.shape[2:], pd, extra)),
                   dtype=og.dtype)
    if t == "max":
        # The gradient goes to the first offset (in kernel order) holding the window's maximum.
        xp, taken = pad_spatial(x, pd, -np.inf, extra), np.zeros(og.shape, dtype=bool)
        for kpos in np.ndindex(*k):
            sl = _window_slices(kpos, s, out)
            hit = (xp[sl] == y) & ~taken
            taken |= hit
            dxp[sl] += og * hit
    else:
        g = og / _divisor(p, x.shape, k, s, pd, out).astype(og.dtype) if t == "avg" else og
        for kpos in np.ndindex(*k):
            dxp[_window_slices(kpos, s, out)] += g
    assign(outputs[0], req[0], crop_spatial(dxp, pd, extra))


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_Pooling", [ograds[0], node.inputs[0], entry(node)]))]


# --- fast kernels: max pooling in C (mxref/_ext/nn_kernels.pyx) over batch ranges ----------------

def _c_takes(p, inputs, outputs, req) -> bool:
    """Max pooling over 1-D/2-D windows of float32/float64 data (``inputs[-2]`` backward)."""
    return p["pool_type"] == "max" and c_takes(inputs[0] if len(inputs) == 1 else inputs[1])


def _c_max_pool(octx, p, inputs, outputs, req):
    x = inputs[0]
    k, s, pd, out, _ = geometry(p, x.shape)
    nd = len(k)
    kh, kw, sh, sw, _, _, ph, pw, _, _ = geometry_2d(k, s, (1,) * nd, pd, out)
    x4 = np.ascontiguousarray(x).reshape(as_2d(x.shape, nd))
    n, c = x.shape[:2]
    res = np.empty(as_2d(tuple(x.shape[:2]) + tuple(out), nd), dtype=x.dtype)
    parallel_for(n, lambda lo, hi: C.max_pool_2d(x4, res, kh, kw, sh, sw, ph, pw, lo, hi),
                 c * int(np.prod(out)) * kh * kw)
    assign(outputs[0], req[0], res.reshape(tuple(x.shape[:2]) + tuple(out)))


def _c_max_pool_backward(octx, p, inputs, outputs, req):
    og, x, y = inputs
    k, s, pd, out, _ = geometry(p, x.shape)
    nd = len(k)
    kh, kw, sh, sw, _, _, ph, pw, _, _ = geometry_2d(k, s, (1,) * nd, pd, out)
    x4 = np.ascontiguousarray(x).reshape(as_2d(x.shape, nd))
    og4, y4 = (np.ascontiguousarray(a, dtype=x.dtype).reshape(as_2d(a.shape, nd)) for a in (og, y))
    dx = np.empty_like(x4)
    parallel_for(x.shape[0],
                 lambda lo, hi: C.max_pool_2d_backward(og4, x4, y4, dx, kh, kw, sh, sw, ph, pw, lo, hi),
                 x.shape[1] * int(np.prod(out)) * kh * kw)
    assign(outputs[0], req[0], dx.reshape(x.shape))


register(OpDef("Pooling", _channel_last(forward), params=PARAMS, infer_shape=infer_shape,
               infer_type=uniform_type(1), gradient=gradient, validate=_validate, doc=__doc__))
register(OpDef("_backward_Pooling", _channel_last(backward), arguments=["ograd", "data", "output"],
               params=PARAMS, infer_shape=lambda p, s: (list(s), [s[1]]), infer_type=uniform_type(1)))
if C is not None:
    register_kernel("Pooling", "cpu", _channel_last(_c_max_pool), applies=_c_takes,
                    name="nn_kernels.max_pool_2d")
    # Overlapping windows (stride < kernel) may add a position's gradients in another order.
    register_kernel("_backward_Pooling", "cpu", _channel_last(_c_max_pool_backward), applies=_c_takes,
                    name="nn_kernels.max_pool_2d_backward", exact=False,
                    tol={"float32": (1e-6, 1e-6), "float64": (1e-12, 1e-12)})
