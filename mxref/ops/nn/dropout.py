"""Dropout: zero each element with probability ``p`` in training and rescale the rest (inverted dropout).

Math (``mask`` drawn from the 'random' resource, shared along ``axes``)::

    mask = [u >= p] / (1 - p),  u ~ U[0, 1)        out = x * mask        dx = g * mask
    (p = 1: mask = 0 * 1/0 = NaN, as MXNet's)

At inference (``mode='training'`` and not ``is_train``) it is the identity with a mask of ones.
Outputs are ``output, mask`` (the mask is hidden). Backward dependencies: ``_backward_Dropout``
takes ``(ograd, mask)``, so the input may be overwritten (forward may run in place).
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ...graph import make_node
from ..registry import OpDef, Param, assign, register
from ._util import backward_node, entry, uniform_type

PARAMS = {
    "p": Param("float", 0.5, doc="Fraction of the input that gets dropped out at training time."),
    "mode": Param("str", "training", choices=("training", "always"),
                  doc="Whether to apply dropout only when training or always."),
    "axes": Param("shape", (), doc="Axes along which one mask value is shared."),
    "cudnn_off": Param("any", False, doc="Turn off cuDNN (ignored)."),
}


def _validate(p):
    if not 0.0 <= p["p"] <= 1.0:
        raise MXNetError(f"Dropout: p must be in [0, 1], got {p['p']}")


def forward(octx, p, inputs, outputs, req):
    x, (out, mask) = inputs[0], outputs
    if (octx.is_train or p["mode"] == "always") and p["p"] > 0:
        mshape = list(x.shape)
        for a in p["axes"]:
            mshape[a] = 1
        dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.float64
        keep = octx.rng.random(tuple(mshape), dtype=dtype) >= p["p"]
        # NOTE: p = 1 keeps nothing and scales by 1/0: the mask is 0 * inf = NaN, as MXNet's
        with np.errstate(divide="ignore", invalid="ignore"):
            mask[...] = keep * np.asarray(np.divide(1.0, 1.0 - p["p"]), dtype=x.dtype)
        assign(out, req[0], x * mask)
    else:
        mask[...] = 1
        assign(out, req[0], x)


def backward(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], inputs[0] * inputs[1])


def gradient(node, ograds):
    return [entry(backward_node(node, "_backward_Dropout", [ograds[0], entry(node, 1)]))]


register(OpDef("Dropout", forward, outputs=["output", "mask"], num_visible_outputs=1, params=PARAMS,
               infer_shape=lambda p, s: (list(s), [s[0], s[0]]), infer_type=uniform_type(2),
               gradient=gradient, inplace=[(0, 0)], resources=["random"], validate=_validate,
               doc=__doc__))
def backward_gradient(node, ograds):
    """``_backward_Dropout(g, mask) = g * mask`` is linear in ``g`` (the same mask again); the mask is
    a sample, not a function of any input, so it gets a zero gradient."""
    again = backward_node(node, "_backward_Dropout", [ograds[0], node.inputs[1]])
    zero = make_node("zeros_like", [node.inputs[1]], node.name + "_dmask")
    return [entry(again), entry(zero)]


register(OpDef("_backward_Dropout", backward, arguments=["ograd", "mask"], params=PARAMS,
               infer_shape=lambda p, s: (list(s), [s[0]]), infer_type=uniform_type(1), inplace=[(0, 0)],
               gradient=backward_gradient))
