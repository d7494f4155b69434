"""BatchNorm: normalise over every axis but ``axis`` with batch statistics (training) or moving ones.

Math (per channel, ``M`` elements each; ``m`` is ``momentum``)::

    mean = E[x]    var = E[(x - mean)^2] (biased)    invstd = 1 / sqrt(var + eps)
    xhat = (x - mean) * invstd              out = gamma * xhat + beta
    moving_mean = m * moving_mean + (1 - m) * mean      (training forward only, in place)
    moving_var  = m * moving_var  + (1 - m) * var
    dbeta = sum g    dgamma = sum g * xhat
    dx = gamma * invstd / M * (M g - sum g - xhat * sum g * xhat)    (batch statistics)
    dx = gamma * invstd * g                                          (moving statistics)

Moving statistics replace batch ones at inference and with ``use_global_stats``. ``fix_gamma``
(default True) uses gamma = 1 and gives gamma a zero gradient; mxref does not also overwrite the
gamma array with ones as MXNet does (arguments are read-only to kernels). Outputs are ``output,
mean, var``; as in MXNet 1.9.1 the ``var`` output holds ``invstd`` (what backward needs), and both
are hidden unless ``output_mean_var``. Backward dependencies: ``_backward_BatchNorm`` takes
``(ograd, data, gamma, mean, var)``; the moving statistics are not needed.

Types (MXNet's rule): float16 data keeps its parameters, moving statistics and the mean/var
outputs in float32 (the statistics are computed in float32); other float types use one dtype.

Kernels: the numpy ``forward``/``backward`` are the reference; for float32/float64 data whose
parameters share its dtype, the C loops of ``mxref/_ext/norm_kernels.pyx`` (two passes over the
data, sums in double precision, channel ranges on the operator threads) are the 'cpu' kernels.
"""
from __future__ import annotations

import math

import numpy as np

from ..._ext import loader
from ...base import MXNetError
from ..parallel import parallel_for
from ..registry import OpDef, Param, assign, register, register_kernel
from ._util import backward_node, entry, merge_shape, out_entries

PARAMS = {
    "eps": Param("float", 1e-3, doc="Epsilon added to the variance."),
    "momentum": Param("float", 0.9, doc="Momentum of the moving average."),
    "fix_gamma": Param("bool", True, doc="Fix gamma to 1 (its gradient is 0)."),
    "use_global_stats": Param("bool", False, doc="Use the moving statistics in training too."),
    "output_mean_var": Param("bool", False, doc="Also output the batch mean and inverse std."),
    "axis": Param("int", 1, doc="The channel axis."),
    "cudnn_off": Param("bool", False, doc="Turn off cuDNN (ignored)."),
    "min_calib_range": Param("float_or_none", None, doc="Quantization range (ignored)."),
    "max_calib_range": Param("float_or_none", None, doc="Quantization range (ignored)."),
}


def _layout(p, x):
    """``(axis, reduce_axes, broadcast_shape, count)`` of the channel axis for array ``x``."""
    ax = p["axis"] % x.ndim
    bshape = [1] * x.ndim
    bshape[ax] = x.shape[ax]
    return tuple(i for i in range(x.ndim) if i != ax), bshape, x.size // x.shape[ax]


def infer_shape(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), [None, None, None]
    if not -len(d) <= p["axis"] < len(d):
        raise MXNetError(f"BatchNorm: axis {p['axis']} is out of range for data shape {tuple(d)}")
    c = (d[p["axis"] % len(d)],)
    names = ["gamma", "beta", "moving_mean", "moving_var"]
    ins = [d] + [merge_shape("BatchNorm", n, s, c) for n, s in zip(names, in_shapes[1:])]
    return ins, [d, c, c]


def _param_dtype(d):
    return np.dtype(np.float32) if d == np.float16 else d


def infer_type(p, in_types):
    """Data in ``d``; gamma, beta, the moving statistics and the mean/var outputs in float32 for
    float16 data, else in ``d`` (mxref's ``uniform_type`` plus MXNet's float16 exception)."""
    d = in_types[0]
    if d is None:                 # typed from the parameters, as the uniform rule does
        d = next((t for t in in_types[1:] if t is not None), None)
    if d is None:
        return list(in_types), [None] * 3
    pt = _param_dtype(d)
    names = ["gamma", "beta", "moving_mean", "moving_var"]
    for name, t in zip(names, in_types[1:]):
        if t is not None and t != pt:
            raise MXNetError(f"BatchNorm: {name} has dtype {np.dtype(t).name}; with {np.dtype(d).name} "
                             f"data it must be {pt.name}")
    return [d] + [pt] * 4, [d, pt, pt]


def _backward_type(p, in_types):
    d = in_types[1] if in_types[1] is not None else in_types[0]
    pt = in_types[2] if in_types[2] is not None else (None if d is None else _param_dtype(d))
    return list(in_types), [d, pt, pt]


def forward(octx, p, inputs, outputs, req):
    x, gamma, beta, mmean, mvar = inputs
    if x.dtype != gamma.dtype:    # float16 data: statistics in float32
        x = x.astype(gamma.dtype)
    red, bshape, _ = _layout(p, x)
    if octx.is_train and not p["use_global_stats"]:
        mean = x.mean(axis=red)
        var = np.square(x - mean.reshape(bshape)).mean(axis=red)
        mom = p["momentum"]
        mmean *= mom
        mmean += (1 - mom) * mean
        mvar *= mom
        mvar += (1 - mom) * var
    else:
        mean, var = mmean, mvar
    invstd = 1.0 / np.sqrt(var + p["eps"])
    scale = invstd if p["fix_gamma"] else gamma * invstd
    y = (x - mean.reshape(bshape)) * scale.reshape(bshape).astype(x.dtype)
    y += beta.reshape(bshape)
    assign(outputs[0], req[0], y)
    assign(outputs[1], req[1], mean)
    assign(outputs[2], req[2], invstd)


def backward(octx, p, inputs, outputs, req):
    g, x, gamma, mean, invstd = inputs
    if x.dtype != gamma.dtype:    # float16 data: the gradient is computed in float32
        g, x = g.astype(gamma.dtype), x.astype(gamma.dtype)
    red, bshape, count = _layout(p, x)
    xhat = (x - mean.reshape(bshape)) * invstd.reshape(bshape)
    sum_g, sum_gx = g.sum(axis=red), (g * xhat).sum(axis=red)
    gam = np.ones_like(gamma) if p["fix_gamma"] else gamma
    if p["use_global_stats"] or not octx.is_train:
        dx = g * (gam * invstd).reshape(bshape)
    else:
        dx = g * count - sum_g.reshape(bshape) - xhat * sum_gx.reshape(bshape)
        dx *= (gam * invstd / count).reshape(bshape)
    assign(outputs[0], req[0], dx)
    assign(outputs[1], req[1], np.zeros_like(gamma) if p["fix_gamma"] else sum_gx)
    assign(outputs[2], req[2], sum_g)


def gradient_to(backward_op: str):
    """The ``gradient`` of a BatchNorm card whose backward op is ``backward_op``: it takes
    ``(ograd, data, gamma, mean, var-output)`` and gives data, gamma and beta gradients (the
    auxiliary moving statistics get none)."""
    def gradient(node, ograds):
        ins = [ograds[0], node.inputs[0], node.inputs[1], entry(node, 1), entry(node, 2)]
        return out_entries(backward_node(node, backward_op, ins), 3) + [None, None]
    return gradient


gradient = gradient_to("_backward_BatchNorm")


BATCH_NORM = register(OpDef("BatchNorm", forward, arguments=["data", "gamma", "beta"],
               aux_states=["moving_mean", "moving_var"], outputs=["output", "mean", "var"],
               num_visible_outputs=lambda p: 3 if p["output_mean_var"] else 1, params=PARAMS,
               infer_shape=infer_shape, infer_type=infer_type, gradient=gradient, doc=__doc__))
# Auxiliary variables created for an unnamed input start at moving_mean=0, moving_var=1 (the
# initializer reads __init__), as MXNet's BatchNorm sets them (semantics item 4).
BATCH_NORM.input_var_attrs = {"moving_mean": {"__init__": '["zero", {}]'},
                              "moving_var": {"__init__": '["one", {}]'}}
register(OpDef("_backward_BatchNorm", backward, arguments=["ograd", "data", "gamma", "mean", "var"],
               outputs=["data", "gamma", "beta"], params=PARAMS, infer_type=_backward_type,
               infer_shape=lambda p, s: (list(s), [s[1], s[2], s[2]])))


# --- fast kernels: the C loops of mxref/_ext/norm_kernels.pyx over channel ranges -----------------
C = loader.load("norm_kernels", "BatchNorm kernels")
_C_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _as_ncs(p, a):
    """``a`` viewed as ``(before, C, after)`` around the channel axis (contiguous)."""
    ax = p["axis"] % a.ndim
    return np.ascontiguousarray(a).reshape(math.prod(a.shape[:ax]), a.shape[ax], -1)


def _c_takes(p, inputs, outputs, req) -> bool:
    """Float32/float64 data with every parameter (and statistic) in the same dtype."""
    dt = inputs[0].dtype
    return dt in _C_DTYPES and inputs[0].ndim >= 1 and all(a.dtype == dt for a in inputs[1:])


def _into(out, req):
    """The buffer a C loop writes: the output itself when written whole and contiguous."""
    return out if req == "write" and out.flags.c_contiguous else np.empty(out.shape, out.dtype)


def _c_forward(octx, p, inputs, outputs, req):
    x, gamma, beta, mmean, mvar = inputs
    x3, c = _as_ncs(p, x), x.shape[p["axis"] % x.ndim]
    batch = bool(octx.is_train and not p["use_global_stats"])
    mean, var = (np.empty(c, x.dtype), np.empty(c, x.dtype)) if batch else (mmean, mvar)
    invstd, y = np.empty(c, x.dtype), _into(outputs[0], req[0])
    args = (x3, gamma, beta, mean, var, invstd, y.reshape(x3.shape), int(batch), int(not p["fix_gamma"]),
            float(p["eps"]))
    parallel_for(c, lambda lo, hi: C.batch_norm_forward(*args, lo, hi), work_per_item=2 * x3[:, 0].size)
    if batch:
        mom = p["momentum"]
        mmean *= mom
        mmean += (1 - mom) * mean
        mvar *= mom
        mvar += (1 - mom) * var
    if y is not outputs[0]:
        assign(outputs[0], req[0], y)
    assign(outputs[1], req[1], mean)
    assign(outputs[2], req[2], invstd)


def _c_backward(octx, p, inputs, outputs, req):
    g, x, gamma, mean, invstd = inputs
    x3, c = _as_ncs(p, x), x.shape[p["axis"] % x.ndim]
    batch = bool(octx.is_train and not p["use_global_stats"])
    dx = _into(outputs[0], req[0]) if req[0] != "null" else np.empty((1, 1, 1), x.dtype)
    dgamma, dbeta = np.empty(c, x.dtype), np.empty(c, x.dtype)
    args = (_as_ncs(p, g), x3, gamma, mean, invstd, dx.reshape(x3.shape) if req[0] != "null" else dx,
            dgamma, dbeta, int(batch), int(not p["fix_gamma"]), int(req[0] != "null"))
    parallel_for(c, lambda lo, hi: C.batch_norm_backward(*args, lo, hi), work_per_item=3 * x3[:, 0].size)
    if req[0] != "null" and dx is not outputs[0]:
        assign(outputs[0], req[0], dx)
    assign(outputs[1], req[1], np.zeros_like(gamma) if p["fix_gamma"] else dgamma)
    assign(outputs[2], req[2], dbeta)


if C is not None:
    # Sums in another order (and in double precision): a tolerance, not the reference's bits.
    _TOL = {"float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)}
    register_kernel("BatchNorm", "cpu", _c_forward, applies=_c_takes,
                    name="norm_kernels.batch_norm_forward", exact=False, tol=_TOL)
    register_kernel("_backward_BatchNorm", "cpu", _c_backward, applies=_c_takes,
                    name="norm_kernels.batch_norm_backward", exact=False, tol=_TOL)
