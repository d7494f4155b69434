"""Activation: elementwise relu, sigmoid, tanh, softrelu, softsign, by ``act_type``.

The math of each act_type is its card in ``mxref/ops/activations.py`` — the same card
``mx.nd.relu`` / ``sigmoid`` / ``tanh`` / ``softsign`` run — so forward, derivative and second
derivative are written once::

    relu      y = max(x, 0)          dy/dx = [y > 0]
    sigmoid   y = 1 / (1 + e^-x)     dy/dx = y (1 - y)
    tanh      y = tanh(x)            dy/dx = 1 - y^2
    softrelu  y = log(1 + e^x)       dy/dx = 1 - e^-y
    softsign  y = x / (1 + |x|)      dy/dx = (1 - |y|)^2

Every derivative is written through the output ``y`` (the card's ``d_y``), so the input can be
freed or overwritten (forward may run in place, MXNet's ``FInplaceOption {0, 0}``).

Backward dependencies: ``_backward_Activation`` takes ``(ograd, output)`` and may write the input
gradient over ``ograd``. It has a gradient too (the card's ``d2_y``), for second derivatives.

Kernels: numpy (the reference), split over the operator threads; for ``act_type='relu'`` on
C-contiguous float32/float64 arrays, the one-pass C loops ``nn_kernels.relu_forward`` /
``relu_backward`` (``mxref/_ext/nn_kernels.pyx``), bit for bit the reference's results.
"""
from __future__ import annotations

import numpy as np

from ...graph import NodeEntry, make_node
from ..activations import CARDS
from ..d2 import Builder, differentiable
from ..parallel import parallel_elementwise
from ..registry import OpDef, Param, elemwise_shape, elemwise_type, get, register, register_kernel
from ._util import backward_node, entry
from .im2col import C

PARAMS = {"act_type": Param("str", choices=("relu", "sigmoid", "softrelu", "softsign", "tanh"),
                            doc="Activation function to be applied.")}


def forward(octx, p, inputs, outputs, req):
    apply = CARDS[p["act_type"]].forward
    if req[0] == "add":
        tmp = np.empty_like(outputs[0])
        apply(inputs[0], tmp)
        outputs[0] += tmp
    elif req[0] != "null":
        parallel_elementwise(lambda x, out: apply(x, out), inputs[0], outputs[0])


def backward(octx, p, inputs, outputs, req):
    og, y = inputs
    slope = CARDS[p["act_type"]].d_y
    if req[0] == "add":
        outputs[0] += og * slope(y)
    elif req[0] != "null":
        parallel_elementwise(lambda g, y_, dx: np.multiply(g, slope(y_), out=dx), og, y, outputs[0])


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_Activation", [ograds[0], entry(node)]))]


def backward_gradient(node, ograds):
    """``b = og * d(y)``: ``og`` gets ``g * d(y)`` (this op again), ``y`` gets ``g * og * d'(y)``
    (the card's ``d2_y``); the chain through ``y = f(x)`` is Activation's own gradient."""
    (g,), (og, y) = ograds, node.inputs
    mk = Builder(node)
    d_og = NodeEntry(make_node("_backward_Activation", [g, y], f"{node.name}_og", params=node.params), 0, 0)
    return [d_og, CARDS[node.params["act_type"]].d2_y(mk, mk("elemwise_mul", g, og), y)]


register(OpDef("Activation", forward, params=PARAMS, gradient=gradient, inplace=[(0, 0)], doc=__doc__))
register(OpDef("_backward_Activation", backward, arguments=["ograd", "output"], params=PARAMS,
               infer_shape=elemwise_shape, infer_type=elemwise_type, inplace=[(0, 0)]))
differentiable("_backward_Activation", backward_gradient)

# MXNet registers no input names (FListInputNames) for Activation, so an executor's monitor calls
# its input "input0" (the symbol's own argument is still "data")
get("Activation").monitor_input_names = False


# --- fast kernels: relu in C (mxref/_ext/nn_kernels.pyx) ------------------------------------------
# numpy's relu is two passes backward (a bool array, then float * bool) and a NaN-checking
# ``maximum`` forward; the C loops are one pass each, a few times faster on an MLP's activations.

_C_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _c_relu_takes(p, inputs, outputs, req) -> bool:
    """relu, written (not added), on C-contiguous arrays of one float32/float64 dtype."""
    if p["act_type"] != "relu" or req[0] == "add":
        return False
    dtype = outputs[0].dtype
    arrays = (*inputs, outputs[0])
    return dtype in _C_DTYPES and all(a.dtype == dtype and a.flags.c_contiguous for a in arrays)


def _c_relu(octx, p, inputs, outputs, req):
    if req[0] != "null":
        parallel_elementwise(lambda x, out: C.relu_forward(x.reshape(-1), out.reshape(-1), 0, x.size),
                             inputs[0], outputs[0])


def _c_relu_backward(octx, p, inputs, outputs, req):
    if req[0] != "null":
        parallel_elementwise(lambda g, y, dx: C.relu_backward(g.reshape(-1), y.reshape(-1), dx.reshape(-1),
                                                              0, g.size), inputs[0], inputs[1], outputs[0])


# An nn_kernels built before these loops existed has no relu_*: numpy runs until it is rebuilt.
if C is not None and hasattr(C, "relu_backward"):
    register_kernel("Activation", "cpu", _c_relu, applies=_c_relu_takes, name="nn_kernels.relu_forward")
    register_kernel("_backward_Activation", "cpu", _c_relu_backward, applies=_c_relu_takes,
                    name="nn_kernels.relu_backward")
