"""``Cast`` (``cast``): convert an array to another dtype.

Float to int truncates toward zero and out-of-range values wrap as in C (numpy's ``astype``).
Gradient: the head gradient cast back to the input's dtype (``_backward_Cast``, which reads only
the input's dtype, so it does not keep the input alive).
"""
from __future__ import annotations

import numpy as np

from ..graph import NodeEntry, make_node
from .registry import OpDef, Param, register


def _cast_kernel(octx, params, inputs, outputs, req):
    r = req[0]
    if r == "write" or r == "inplace":
        np.copyto(outputs[0], inputs[0], casting="unsafe")
    elif r == "add":
        outputs[0] += inputs[0].astype(outputs[0].dtype)


def _cast_type(params, in_types):
    return list(in_types), [params["dtype"]]


def _cast_grad(node, ograds):
    n = make_node("_backward_Cast", [ograds[0], node.inputs[0]], node.name + "_backward")
    return [NodeEntry(n, 0, 0)]


register(OpDef("Cast", _cast_kernel, aliases=("cast",), params={"dtype": Param("dtype")},
               infer_type=_cast_type, gradient=_cast_grad,
               doc="Cast(data, dtype): ``data`` converted to ``dtype``."))

register(OpDef("_backward_Cast", _cast_kernel, arguments=("ograd", "data"),
               infer_type=lambda p, t: (list(t), [t[1]]), ignore_inputs=(1,),
               params={"dtype": Param("dtype", None)}))
