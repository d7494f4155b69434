"""UpSampling: nearest-neighbour (one or several inputs) or bilinear (a fixed-stride Deconvolution).

Math::

    nearest   out[n, c, h, w] = x[n, c, h // s_i, w // s_i]      s_i = scale * H_0 / H_i
              dx_i = sum of dout over each s_i x s_i block; inputs are concatenated on the channel
              axis (``multi_input_mode='concat'``) or summed ('sum')
    bilinear  out = Deconvolution(x, weight, kernel=2s - s%2, stride=s, pad=ceil((s-1)/2),
                                  num_group=num_filter)       (weight: (num_filter, 1, k, k))

Backward dependencies: nearest takes ``(ograd)`` for one input and ``(ograd, *inputs)`` (for their
shapes) for several; bilinear takes ``(ograd, data, weight)`` like Deconvolution.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ..registry import get as get_op
from ._util import backward_node, merge_shape, out_entries, uniform_type
from .deconvolution import backward as deconv_backward
from .deconvolution import forward as deconv_forward

PARAMS = {
    "scale": Param("int", doc="Up sampling scale."),
    "num_filter": Param("int", 0, doc="Input filter; only used by bilinear sample_type."),
    "sample_type": Param("str", choices=("bilinear", "nearest"), doc="Upsampling method."),
    "multi_input_mode": Param("str", "concat", choices=("concat", "sum"),
                              doc="How to combine several inputs (nearest only)."),
    "num_args": Param("int", 1, doc="Number of inputs to be upsampled."),
    "workspace": Param("int", 512, doc="Workspace limit in MB (unused)."),
}


def _arguments(p):
    if p["sample_type"] == "bilinear":
        return ["data", "weight"]
    return [f"arg{i}" for i in range(p["num_args"])]


def _deconv_params(p):
    s = p["scale"]
    k, pad = 2 * s - s % 2, s // 2  # s // 2 == ceil((s - 1) / 2)
    return get_op("Deconvolution").parse_params({
        "kernel": (k, k), "stride": (s, s), "pad": (pad, pad), "num_filter": p["num_filter"],
        "num_group": p["num_filter"], "no_bias": True})


def infer_shape(p, in_shapes):
    ins, s = list(in_shapes), p["scale"]
    d = ins[0]
    if d is None:
        return ins, [None]
    if len(d) != 4:
        raise MXNetError(f"UpSampling: data must be 4-D (N, C, H, W), got shape {tuple(d)}")
    out_hw = (d[2] * s, d[3] * s)
    if p["sample_type"] == "bilinear":
        k = 2 * s - s % 2
        ins[1] = merge_shape("UpSampling", "weight", ins[1], (p["num_filter"], 1, k, k))
        return ins, [(d[0], d[1]) + out_hw]
    if any(x is None for x in ins):
        return ins, [None]
    for x in ins:
        if out_hw[0] % x[2] or out_hw[1] % x[3] or out_hw[0] // x[2] != out_hw[1] // x[3]:
            raise MXNetError(f"UpSampling: input shape {tuple(x)} cannot be scaled to {out_hw}")
    if p["multi_input_mode"] == "sum":
        chans = {x[1] for x in ins}
        if len(chans) != 1:
            raise MXNetError(f"UpSampling: 'sum' needs equal channels, got shapes {ins}")
        return ins, [(d[0], d[1]) + out_hw]
    return ins, [(d[0], sum(x[1] for x in ins)) + out_hw]


def forward(octx, p, inputs, outputs, req):
    if p["sample_type"] == "bilinear":
        return deconv_forward(octx, _deconv_params(p), inputs, outputs, req)
    out_h = outputs[0].shape[2]
    ups = [x.repeat(out_h // x.shape[2], axis=2).repeat(out_h // x.shape[2], axis=3) for x in inputs]
    assign(outputs[0], req[0], sum(ups) if p["multi_input_mode"] == "sum" else np.concatenate(ups, 1))


def backward(octx, p, inputs, outputs, req):
    if p["sample_type"] == "bilinear":
        return deconv_backward(octx, _deconv_params(p), inputs, outputs, req)
    g, c0 = inputs[0], 0
    for i, dx in enumerate(outputs):
        s = g.shape[2] // dx.shape[2]
        gi = g if p["multi_input_mode"] == "sum" else g[:, c0:c0 + dx.shape[1]]
        c0 += dx.shape[1]
        n, c, h, w = dx.shape
        assign(dx, req[i], gi.reshape(n, c, h, s, w, s).sum(axis=(3, 5)))


def gradient(node, ograds):
    p = node.params
    ins = [ograds[0]] + (list(node.inputs) if p["sample_type"] == "bilinear" or p["num_args"] > 1 else [])
    return out_entries(backward_node(node, "_backward_UpSampling", ins), len(node.inputs))


def backward_shape(p, in_shapes):
    g = in_shapes[0]
    if len(in_shapes) > 1:
        return list(in_shapes), list(in_shapes[1:])
    s = p["scale"]
    return list(in_shapes), [None if g is None else (g[0], g[1], g[2] // s, g[3] // s)]


register(OpDef("UpSampling", forward, arguments=_arguments, params=PARAMS, infer_shape=infer_shape,
               infer_type=uniform_type(1), gradient=gradient, key_var_num_args="num_args", doc=__doc__))
register(OpDef("_backward_UpSampling", backward, outputs=_arguments, params=PARAMS,
               arguments=lambda p: ["ograd"] + (_arguments(p) if p["sample_type"] == "bilinear"
                                              or p["num_args"] > 1 else []),
               infer_shape=backward_shape, infer_type=uniform_type(lambda p: len(_arguments(p)))))
