"""FullyConnected: ``out = flatten(data) @ weight.T + bias``.

Math (``x`` is ``data`` flattened to ``(N, K)`` when ``flatten``, else every index but the last is a
batch index)::

    out   = x W^T + b                 W: (num_hidden, K), b: (num_hidden,)
    dx    = dout W                    dW = dout^T x                 db = sum_batch dout

Backward dependencies: ``_backward_FullyConnected`` takes ``(ograd, data, weight)``; the output is
not needed, so the planner may free it after its consumers ran. Both directions are one GEMM each.

Kernels: numpy only (the reference), its GEMMs split over the operator threads, except backward's
``dx`` and ``dW``, which run side by side, each whole, when both are wanted and big (two operator
threads); ``db`` is summed straight into its gradient. No fast kernel is registered.

Second derivative: ``_backward_FullyConnected`` is linear in ``ograd`` and in each of ``data`` and
``weight``, so its gradient, for head gradients ``(gx, gW, gb)`` of its outputs ``(dx, dW, db)``,
is made of the same two operators::

    d ograd  = gx W^T + x gW^T + gb   = FullyConnected(gx, W, no_bias) + FullyConnected(x, gW, gb)
    d data   = dout gW                = _backward_FullyConnected(dout, x, gW)[0]
    d weight = dout^T gx              = _backward_FullyConnected(dout, gx, W)[1]
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ...graph import NodeEntry, make_node
from ..parallel import concurrent_gemms, run_concurrently
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, known, matmul_into, merge_shape, out_entries, uniform_type

PARAMS = {
    "num_hidden": Param("int", doc="Number of hidden units of the output."),
    "no_bias": Param("bool", False, doc="Whether to disable the bias parameter."),
    "flatten": Param("bool", True, doc="Whether to collapse all but the first axis of the input."),
}


def _arguments(p):
    return ["data", "weight"] if p["no_bias"] else ["data", "weight", "bias"]


def _as2d(p, x):
    return x.reshape(x.shape[0], -1) if p["flatten"] else x.reshape(-1, x.shape[-1])


def infer_shape(p, in_shapes, out_shapes=None):
    data, nh = in_shapes[0], p["num_hidden"]
    ins = list(in_shapes)
    out = out_shapes[0] if out_shapes else None
    if data is not None and out is not None and len(out) == (2 if p["flatten"] else len(data)):
        # As MXNet: a known output gives the data its batch dimension(s), e.g. a zero begin state
        # of batch 0 in a symbolic RNN unroll, feeding the h2h layer.
        lead = out[:1] if p["flatten"] else out[:-1]
        data = tuple(a or b for a, b in zip(lead, data)) + tuple(data[len(lead):])
        ins[0] = data
    if data is None or not data or (p["flatten"] and not known(data[1:])) or not data[-1]:
        return ins, [None]
    in_dim = 1
    for d in (data[1:] if p["flatten"] else data[-1:]):
        in_dim *= d
    ins[1] = merge_shape("FullyConnected", "weight", ins[1], (nh, in_dim))
    if not p["no_bias"]:
        ins[2] = merge_shape("FullyConnected", "bias", ins[2], (nh,))
    out = (data[0], nh) if p["flatten"] else tuple(data[:-1]) + (nh,)
    return ins, [out]


def forward(octx, p, inputs, outputs, req):
    x, w = _as2d(p, inputs[0]), inputs[1]
    out = outputs[0].reshape(x.shape[0], w.shape[0])
    matmul_into(out, req[0], x, w.T)
    if not p["no_bias"] and req[0] != "null":
        out += inputs[2]


def backward(octx, p, inputs, outputs, req):
    og, data, w = inputs
    x = _as2d(p, data)
    (n, k), h = x.shape, w.shape[0]
    og2, dx = og.reshape(n, h), outputs[0].reshape(x.shape)
    if req[0] != "null" and req[1] != "null" and concurrent_gemms((n, h, k), (h, n, k)):
        # dx and dW are independent: side by side on the operator threads, each GEMM whole, is
        # one hand-off instead of two and no GEMM cut into thinner, slower halves.
        run_concurrently(lambda: matmul_into(outputs[1], req[1], og2.T, x, split=False),
                         lambda: matmul_into(dx, req[0], og2, w, split=False))
    else:
        matmul_into(dx, req[0], og2, w)
        matmul_into(outputs[1], req[1], og2.T, x)
    if not p["no_bias"]:
        db = outputs[2]
        if req[2] in ("write", "inplace") and db.flags.c_contiguous and db.dtype == og2.dtype:
            np.add.reduce(og2, axis=0, out=db)      # the column sum straight into the gradient
        else:
            assign(db, req[2], og2.sum(axis=0))


def backward_shape(p, in_shapes):
    og, data, w = in_shapes
    outs = [data, w] + ([] if p["no_bias"] else [None if w is None else (w[0],)])
    return list(in_shapes), outs


def gradient(node, ograds):
    data, weight = node.inputs[0], node.inputs[1]
    bwd = backward_node(node, "_backward_FullyConnected", [ograds[0], data, weight])
    return out_entries(bwd, 2 if node.params["no_bias"] else 3)


def backward_gradient(node, ograds):
    """The gradient of ``_backward_FullyConnected`` (the module doc's second derivative)."""
    og, data, weight = node.inputs
    gx, gw = ograds[0], ograds[1]
    p, name = node.params, node.name
    no_bias = dict(p, no_bias=True)
    through_w = make_node("FullyConnected", [gx, weight], name + "_gx_w", params=no_bias)
    through_x = make_node("FullyConnected", [data, gw] + ([] if p["no_bias"] else [ograds[2]]),
                          name + "_x_gw", params=p)
    d_og = make_node("elemwise_add", [NodeEntry(through_w, 0, 0), NodeEntry(through_x, 0, 0)],
                     name + "_dograd")
    d_data = make_node("_backward_FullyConnected", [og, data, gw], name + "_ddata", params=p)
    d_weight = make_node("_backward_FullyConnected", [og, gx, weight], name + "_dweight", params=p)
    return [NodeEntry(d_og, 0, 0), NodeEntry(d_data, 0, 0), NodeEntry(d_weight, 1, 0)]


def _validate(p):
    if p["num_hidden"] <= 0:
        raise MXNetError(f"FullyConnected: num_hidden must be positive, got {p['num_hidden']}")


register(OpDef("FullyConnected", forward, arguments=_arguments, params=PARAMS, infer_shape=infer_shape,
               infer_type=uniform_type(1), gradient=gradient, validate=_validate, doc=__doc__))
register(OpDef("_backward_FullyConnected", backward, arguments=["ograd", "data", "weight"],
               outputs=lambda p: _arguments(p), params=PARAMS, infer_shape=backward_shape,
               infer_type=uniform_type(lambda p: 2 if p["no_bias"] else 3), gradient=backward_gradient))
