"""``ftml_update``: Follow the Moving Leader (Zheng & Kwok, 2017).

With ``g = clip(rescale_grad*grad + wd*w, clip_grad)`` (weight decay *inside* the clip; note the
parameter is ``clip_grad`` here, not ``clip_gradient``) and ``t`` the update count::

    v   = beta2*v + (1-beta2)*g^2
    d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
    z   = beta1*z + (1-beta1)*g - (d_t - beta1*d) * w
    d   = d_t
    w   = -z / d_t

``d``, ``v`` and ``z`` are the mutated states. No gradient (a terminal operation).
"""
from __future__ import annotations

import numpy as np

from ..registry import Param
from .common import CLIP, LR, RESCALE, WD, update_op, write


def _ftml(octx, p, inputs, outputs, req):
    w, grad, d, v, z = inputs
    beta1, beta2, t = p["beta1"], p["beta2"], p["t"]
    g = grad * p["rescale_grad"]
    g += p["wd"] * w
    if p["clip_grad"] >= 0:
        np.clip(g, -p["clip_grad"], p["clip_grad"], out=g)
    v *= beta2
    v += (1.0 - beta2) * np.square(g)
    d_t = (1.0 - beta1 ** t) / p["lr"] * (np.sqrt(v / (1.0 - beta2 ** t)) + p["epsilon"])
    z *= beta1
    z += (1.0 - beta1) * g - (d_t - beta1 * d) * w
    d[...] = d_t
    write(outputs[0], req[0], lambda dst: np.divide(-z, d_t, out=dst, casting="same_kind"))


update_op("ftml_update", _ftml, ("d", "v", "z"),
          {"lr": LR, "beta1": Param("float", 0.6, doc="Generally close to 0.5."),
           "beta2": Param("float", 0.999, doc="Generally close to 1."),
           "epsilon": Param("float", 1e-8, doc="Epsilon to prevent div 0."),
           "t": Param("int", doc="Number of update."), "wd": WD, "rescale_grad": RESCALE,
           "clip_grad": CLIP},
          "FTML step (see the module docstring): states ``d``, ``v``, ``z`` updated in place.\n\n" + __doc__)
