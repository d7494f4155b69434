"""RMSProp update operators: ``rmsprop_update`` (Tieleman & Hinton) and ``rmspropalex_update`` (Graves).

With ``g = clip(rescale_grad*grad + wd*w, clip_gradient)`` (weight decay before the clip)::

    rmsprop_update:      n = (1-gamma1)*g^2 + gamma1*n
                         w = w - lr * g / sqrt(n + epsilon)
    rmspropalex_update:  n = (1-gamma1)*g^2 + gamma1*n;   gm = (1-gamma1)*g + gamma1*gm
                         delta = gamma2*delta - lr * g / sqrt(n - gm^2 + epsilon);   w = w + delta

Then the weight is clipped to ``[-clip_weights, clip_weights]`` when ``clip_weights >= 0``.
"""
from __future__ import annotations

import numpy as np

from ..registry import Param, assign
from .common import CLIP, LR, RESCALE, WD, clip_weights, update_op


def _grad(w, grad, params):
    g = grad * params["rescale_grad"] + params["wd"] * w
    if params["clip_gradient"] >= 0:
        np.clip(g, -params["clip_gradient"], params["clip_gradient"], out=g)
    return g


def _decay(state, value, gamma):
    state *= gamma
    state += (1.0 - gamma) * value


def _rmsprop(octx, params, inputs, outputs, req):
    w, grad, n = inputs
    g = _grad(w, grad, params)
    _decay(n, g * g, params["gamma1"])
    new_w = w - params["lr"] * (g / np.sqrt(n + params["epsilon"]))
    assign(outputs[0], req[0], clip_weights(new_w, params["clip_weights"]))


def _rmspropalex(octx, params, inputs, outputs, req):
    w, grad, n, gm, delta = inputs
    g = _grad(w, grad, params)
    _decay(n, g * g, params["gamma1"])
    _decay(gm, g, params["gamma1"])
    delta *= params["gamma2"]
    delta -= params["lr"] * (g / np.sqrt(n - gm * gm + params["epsilon"]))
    assign(outputs[0], req[0], clip_weights(w + delta, params["clip_weights"]))


_COMMON = {"lr": LR, "gamma1": Param("float", 0.95, doc="Decay of the squared-gradient average."),
           "epsilon": Param("float", 1e-8), "wd": WD, "rescale_grad": RESCALE, "clip_gradient": CLIP,
           "clip_weights": Param("float", -1.0, doc="Clip weights to [-c, c]; negative: no clipping.")}

update_op("rmsprop_update", _rmsprop, ("n",), dict(_COMMON),
          "RMSProp (Tieleman & Hinton): ``n = (1-gamma1)*g^2 + gamma1*n; w -= lr*g/sqrt(n+eps)``.")
update_op("rmspropalex_update", _rmspropalex, ("n", "g", "delta"),
          dict(_COMMON, gamma2=Param("float", 0.9, doc="Momentum of delta.")),
          "Centered RMSProp (Graves 2013) with momentum ``gamma2`` on the step ``delta``.")
