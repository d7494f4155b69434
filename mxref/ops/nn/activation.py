"""Activation: elementwise relu, sigmoid, tanh, softrelu, softsign.

Math, with every derivative written through the output ``y`` so the input can be freed or
overwritten (forward may run in place, MXNet's ``FInplaceOption {0, 0}``)::

    relu      y = max(x, 0)          dy/dx = [y > 0]
    sigmoid   y = 1 / (1 + e^-x)     dy/dx = y (1 - y)
    tanh      y = tanh(x)            dy/dx = 1 - y^2
    softrelu  y = log(1 + e^x)       dy/dx = 1 - e^-y
    softsign  y = x / (1 + |x|)      dy/dx = (1 - |y|)^2

Backward dependencies: ``_backward_Activation`` takes ``(ograd, output)`` and may write the input
gradient over ``ograd``.
"""
from __future__ import annotations

import numpy as np

from ..parallel import parallel_elementwise
from ..registry import OpDef, Param, elemwise_shape, elemwise_type, register
from ._util import backward_node, entry

PARAMS = {"act_type": Param("str", choices=("relu", "sigmoid", "softrelu", "softsign", "tanh"),
                            doc="Activation function to be applied.")}


def _apply(act, x, out):
    if act == "relu":
        np.maximum(x, 0, out=out)
    elif act == "sigmoid":
        np.negative(x, out=out)
        np.exp(out, out=out)
        out += 1
        np.reciprocal(out, out=out)
    elif act == "tanh":
        np.tanh(x, out=out)
    elif act == "softrelu":
        np.logaddexp(x, 0, out=out)  # log(1 + e^x) without overflow
    else:
        np.divide(x, 1 + np.abs(x), out=out)


def _slope(act, y):
    if act == "relu":
        return y > 0
    if act == "sigmoid":
        return y * (1 - y)
    if act == "tanh":
        return 1 - y * y
    if act == "softrelu":
        return -np.expm1(-y)
    return np.square(1 - np.abs(y))


def forward(octx, p, inputs, outputs, req):
    if req[0] == "add":
        tmp = np.empty_like(outputs[0])
        _apply(p["act_type"], inputs[0], tmp)
        outputs[0] += tmp
    elif req[0] != "null":
        act = p["act_type"]
        parallel_elementwise(lambda x, out: _apply(act, x, out), inputs[0], outputs[0])


def backward(octx, p, inputs, outputs, req):
    og, y = inputs
    if req[0] == "add":
        outputs[0] += og * _slope(p["act_type"], y)
    elif req[0] != "null":
        act = p["act_type"]
        parallel_elementwise(lambda g, y_, dx: np.multiply(g, _slope(act, y_), out=dx), og, y, outputs[0])


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_Activation", [ograds[0], entry(node)]))]


register(OpDef("Activation", forward, params=PARAMS, gradient=gradient, inplace=[(0, 0)], doc=__doc__))
register(OpDef("_backward_Activation", backward, arguments=["ograd", "output"], params=PARAMS,
               infer_shape=elemwise_shape, infer_type=elemwise_type, inplace=[(0, 0)]))
