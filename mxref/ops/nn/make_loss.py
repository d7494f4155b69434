"""MakeLoss and make_loss (turn any output into a loss) and BlockGrad / stop_gradient (identity that
stops gradients).

Math::

    MakeLoss   out = x      dx = grad_scale / n   (the head gradient is ignored: it is a loss layer)
    make_loss  out = x      dx = 1                (MXNet's unary form: output ``loss``, no parameters)
    BlockGrad  out = x      dx = 0

``n`` is 1 (``normalization='null'``), the batch size (``'batch'``) or the number of elements of
``x`` greater than ``valid_thresh`` (``'valid'``, at least 1). Backward dependencies:
``_backward_MakeLoss`` takes ``(output)`` (its shape, and the values 'valid' counts); BlockGrad's
gradient is ``None`` (zeros) and builds no node.
"""
from __future__ import annotations

from ...graph import make_node
from ..registry import OpDef, Param, assign, elemwise_shape, elemwise_type, register
from ._util import backward_node, entry

PARAMS = {
    "grad_scale": Param("float", 1.0, doc="Gradient scale."),
    "valid_thresh": Param("float", 0.0, doc="Elements above this count as valid for 'valid'."),
    "normalization": Param("str", "null", choices=("null", "batch", "valid"),
                           doc="How to normalise the gradient."),
}


def identity(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], inputs[0])


def backward(octx, p, inputs, outputs, req):
    x, norm = inputs[0], p["normalization"]
    n = {"null": 1, "batch": x.shape[0] if x.ndim else 1,
         "valid": max(int((x > p["valid_thresh"]).sum()), 1)}[norm]
    if req[0] == "add":
        outputs[0] += p["grad_scale"] / n
    elif req[0] != "null":
        outputs[0][...] = p["grad_scale"] / n


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_MakeLoss", [entry(node)]))]


register(OpDef("MakeLoss", identity, params=PARAMS, gradient=gradient, inplace=[(0, 0)],
               inplace_identity=[True], loss_layer=True, doc=__doc__))
register(OpDef("_backward_MakeLoss", backward, arguments=["output"], params=PARAMS, inplace=[(0, 0)]))
register(OpDef("BlockGrad", identity, gradient=lambda node, ograds: [None], inplace=[(0, 0)],
               inplace_identity=[True],
               infer_shape=elemwise_shape, infer_type=elemwise_type, aliases=["stop_gradient"],
               doc=__doc__))


# -- make_loss: the unary operator (MXNet's elemwise make_loss), next to MakeLoss ------------------
# out = x; dx = ones_like(x): the head gradient is never read, so backward may start without one.

def _make_loss_gradient(node, ograds):
    return [entry(make_node("ones_like", [node.inputs[0]], node.name + "_backward"))]


register(OpDef("make_loss", identity, outputs=["loss"], gradient=_make_loss_gradient, inplace=[(0, 0)],
               inplace_identity=[True], infer_shape=elemwise_shape, infer_type=elemwise_type,
               loss_layer=True,
               doc="make_loss(data): identity forward whose gradient is ones (a custom loss's terminal).\n\n"
                   "Math: out = x, dx = 1 (the head gradient is ignored)."))
