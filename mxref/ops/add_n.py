"""The operators the gradient pass inserts: ``add_n`` (``ElementWiseSum``), ``_grad_add`` and
``_identity_with_attr_like_rhs``.

``add_n(a_1, ..., a_n) = a_1 + ... + a_n``; the gradient of every input is the output gradient
(passed through ``identity`` nodes, as MXNet does, so each input's gradient is its own entry).
The sum may be written into ``a_1``'s memory (in-place pair ``(0, 0)``), which is how several
consumers' gradients are summed without a new buffer. ``_grad_add`` is the two-input sum used for
long chains (``MXNET_EXEC_INPLACE_GRAD_SUM_CAP``); ``_identity_with_attr_like_rhs`` copies its
first input but takes shape and dtype from its second, which it never reads: the executor wraps
each head gradient in it so the head gradient's shape is known from the output it belongs to.
Kernels are numpy only: each is one ``np.add``/``np.copyto`` per input.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ..graph import NodeEntry, make_node
from .registry import OpDef, Param, register


def _check_num_args(params):
    if params["num_args"] < 1:
        raise MXNetError(f"operator add_n: num_args must be >= 1, got {params['num_args']}")


def _sum_into(octx, params, inputs, outputs, req):
    out, r = outputs[0], req[0]
    if r == "null":
        return
    if r == "add":
        for x in inputs:
            out += x
        return
    # NOTE: with req 'inplace' the output is a view of inputs[0]; only input 0 may alias it
    if not np.may_share_memory(out, inputs[0]):
        np.copyto(out, inputs[0])
    for x in inputs[1:]:
        np.add(out, x, out=out)


def _add_n_gradient(node, ograds):
    return [NodeEntry(make_node("identity", [ograds[0]], f"{node.name}_backward_{i}"), 0, 0)
            for i in range(len(node.inputs))]


register(OpDef(
    "add_n", _sum_into,
    arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])],
    params={"num_args": Param("int", doc="Number of inputs to be summed.")},
    key_var_num_args="num_args", validate=_check_num_args, gradient=_add_n_gradient,
    inplace=[(0, 0)], aliases=("ElementWiseSum",),
    doc="Adds all input arguments element-wise: ``add_n(a_1, ..., a_n) = a_1 + ... + a_n``."))


def _grad_add_gradient(node, ograds):
    return [ograds[0], ograds[0]]


register(OpDef(
    "_grad_add", _sum_into, arguments=("lhs", "rhs"), gradient=_grad_add_gradient,
    inplace=[(0, 0), (1, 0)],
    doc="``lhs + rhs``; the gradient pass chains these to sum many gradients in place."))


def _copy_lhs(octx, params, inputs, outputs, req):
    _sum_into(octx, params, inputs[:1], outputs, req)


def _identity_like_rhs_gradient(node, ograds):
    return [ograds[0], None]


register(OpDef(
    "_identity_with_attr_like_rhs", _copy_lhs, arguments=("lhs", "rhs"),
    gradient=_identity_like_rhs_gradient, inplace=[(0, 0)], inplace_identity=[True],
    ignore_inputs=[1],
    doc="Copies ``lhs``; shape and dtype are constrained to be those of ``rhs`` (never read)."))
