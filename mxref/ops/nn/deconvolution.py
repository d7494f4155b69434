"""Deconvolution (transposed convolution): the adjoint of Convolution's data path, as GEMM + col2im.

Math (``x2d`` is ``data`` as rows ``(n, i)`` by channels; ``W_g`` is group g's weight as a
``(C/G, F/G * prod(kernel))`` matrix; ``conv`` is Convolution with the same geometry)::

    out   = crop_pad(col2im(x2d_g @ W_g)) + bias        (Convolution's ddata, with W as its weight)
    ddata = conv(dout, W)  = im2col(pad(dout))_g @ W_g^T
    dW_g  = x2d_g^T @ im2col(pad(dout))_g               dbias = sum_{n, o} dout

Output size per axis: ``(in - 1) * stride - 2 * pad + dilate * (kernel - 1) + 1 + adj``; with
``target_shape`` the pad and adj are derived from it (as MXNet does) and ``pad``/``adj`` are ignored.
Weight shape ``(C, num_filter / num_group, *kernel)``; ``no_bias`` defaults to True. Backward
dependencies: ``_backward_Deconvolution`` takes ``(ograd, data, weight)``.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, known, merge_shape, out_entries, uniform_type
from .convolution import PARAMS as CONV_PARAMS
from .convolution import check_layout, geometry
from .im2col import col2im, im2col, pad_spatial

PARAMS = dict(CONV_PARAMS)
PARAMS.update({
    "adj": Param("shape", (), doc="Extra size added at the end of each output axis."),
    "target_shape": Param("shape", (), doc="Output spatial shape; sets pad and adj."),
    "workspace": Param("int", 512, doc="Workspace limit in MB (unused on CPU)."),
    "no_bias": Param("bool", True, doc="Whether to disable the bias parameter."),
})


def full_geometry(p, in_spatial):
    """``(kernel, stride, dilate, pad, adj, out_spatial)`` for the data's spatial shape."""
    k, s, d, pd = geometry("Deconvolution", p)
    adj = p["adj"] or (0,) * len(k)
    if p["target_shape"]:
        pd, adj = [], []
        for x, kk, ss, dd, t in zip(in_spatial, k, s, d, p["target_shape"]):
            total = ss * (x - 1) + dd * (kk - 1) + 1 - t
            if total < 0:
                raise MXNetError(f"Deconvolution: target_shape {p['target_shape']} is too large")
            adj.append(total % 2)
            pd.append((total + 1) // 2)
    out = tuple((x - 1) * ss - 2 * pp + dd * (kk - 1) + 1 + a
                for x, ss, pp, dd, kk, a in zip(in_spatial, s, pd, d, k, adj))
    return k, s, d, tuple(pd), tuple(adj), out


def _arguments(p):
    return ["data", "weight"] if p["no_bias"] else ["data", "weight", "bias"]


def infer_shape(p, in_shapes):
    k = geometry("Deconvolution", p)[0]
    data, f, g = in_shapes[0], p["num_filter"], p["num_group"]
    ins = list(in_shapes)
    if data is None or not known(data[1:]):
        return ins, [None]
    if len(data) != 2 + len(k) or data[1] % g or f % g:
        raise MXNetError(f"Deconvolution: data shape {tuple(data)} does not fit kernel {k}, "
                         f"num_filter {f} and num_group {g}")
    ins[1] = merge_shape("Deconvolution", "weight", ins[1], (data[1], f // g) + tuple(k))
    if not p["no_bias"]:
        ins[2] = merge_shape("Deconvolution", "bias", ins[2], (f,))
    return ins, [(data[0], f) + full_geometry(p, data[2:])[5]]


def _rows(x):
    """``(N, C, *S)`` as a contiguous ``(N * prod(S), C)`` matrix."""
    n, c = x.shape[:2]
    return np.ascontiguousarray(x.reshape(n, c, -1).transpose(0, 2, 1)).reshape(-1, c)


def forward(octx, p, inputs, outputs, req):
    x, w, g = inputs[0], inputs[1], p["num_group"]
    k, s, d, pd, adj, out = full_geometry(p, x.shape[2:])
    x2, w2 = _rows(x), w.reshape(g, w.shape[0] // g, -1)
    cg, fk = w2.shape[1], w2.shape[2]
    dcols = np.empty((x2.shape[0], g * fk), dtype=x.dtype)
    for i in range(g):
        np.matmul(x2[:, i * cg:(i + 1) * cg], w2[i], out=dcols[:, i * fk:(i + 1) * fk])
    padded = (x.shape[0], p["num_filter"]) + tuple(o + 2 * pp for o, pp in zip(out, pd))
    y = col2im(dcols, padded, k, s, d, x.shape[2:], pd)
    if not p["no_bias"]:
        y += inputs[2].reshape((1, -1) + (1,) * len(k))
    assign(outputs[0], req[0], y)


def backward(octx, p, inputs, outputs, req):
    og, x, w, g = inputs[0], inputs[1], inputs[2], p["num_group"]
    k, s, d, pd, adj, out = full_geometry(p, x.shape[2:])
    cols = im2col(pad_spatial(og, pd), k, s, d, x.shape[2:])
    x2, w2 = _rows(x), w.reshape(g, w.shape[0] // g, -1)
    cg, fk = w2.shape[1], w2.shape[2]
    if req[0] != "null":
        dx2 = np.concatenate([cols[:, i * fk:(i + 1) * fk] @ w2[i].T for i in range(g)], axis=1)
        n = x.shape[0]
        assign(outputs[0], req[0], dx2.reshape(n, -1, x.shape[1]).transpose(0, 2, 1).reshape(x.shape))
    dw = np.stack([x2[:, i * cg:(i + 1) * cg].T @ cols[:, i * fk:(i + 1) * fk] for i in range(g)])
    assign(outputs[1], req[1], dw.reshape(w.shape))
    if not p["no_bias"]:
        assign(outputs[2], req[2], og.sum(axis=(0,) + tuple(range(2, og.ndim))))


def gradient(node, ograds):
    bwd = backward_node(node, "_backward_Deconvolution", [ograds[0], node.inputs[0], node.inputs[1]])
    return out_entries(bwd, 2 if node.params["no_bias"] else 3)


def _validate(p):
    geometry("Deconvolution", p)
    check_layout("Deconvolution", p)


register(OpDef("Deconvolution", forward, arguments=_arguments, params=PARAMS, infer_shape=infer_shape,
               infer_type=uniform_type(1), gradient=gradient, validate=_validate, doc=__doc__))
register(OpDef("_backward_Deconvolution", backward, arguments=["ograd", "data", "weight"],
               outputs=_arguments, params=PARAMS, infer_type=uniform_type(lambda p: 2 if p["no_bias"] else 3),
               infer_shape=lambda p, s: (list(s), [s[1], s[2]] + ([] if p["no_bias"] else [
                   None if s[2] is None else (s[2][1] * p["num_group"],)]))))
