"""Sign-based update operators: ``signsgd_update`` and ``signum_update`` (Bernstein et al., 2018).

With ``g = clip(rescale_grad * grad, clip_gradient)``::

    signsgd_update:  w = (1 - lr*wd) * w - lr * sign(g)
    signum_update:   m = momentum*m - (1-momentum)*wd*w - (1-momentum)*g
                     w = (1 - lr*wd_lh) * w + lr * sign(m)

``wd_lh`` is decoupled weight decay (Loshchilov & Hutter). No gradients; numpy kernels only.
"""
from __future__ import annotations

import numpy as np

from ..registry import Param, assign
from .common import CLIP, LR, RESCALE, WD, preprocess, update_op


def _signsgd(octx, params, inputs, outputs, req):
    w, grad = inputs
    lr = params["lr"]
    g = preprocess(grad, params["rescale_grad"], params["clip_gradient"])
    assign(outputs[0], req[0], (1.0 - lr * params["wd"]) * w - lr * np.sign(g))


def _signum(octx, params, inputs, outputs, req):
    w, grad, mom = inputs
    lr, momentum = params["lr"], params["momentum"]
    g = preprocess(grad, params["rescale_grad"], params["clip_gradient"])
    mom *= momentum
    mom -= ((1.0 - momentum) * params["wd"]) * w
    mom -= (1.0 - momentum) * g
    assign(outputs[0], req[0], (1.0 - lr * params["wd_lh"]) * w + lr * np.sign(mom))


_COMMON = {"lr": LR, "wd": WD, "rescale_grad": RESCALE, "clip_gradient": CLIP}
update_op("signsgd_update", _signsgd, (), dict(_COMMON),
          "signSGD: ``w = (1 - lr*wd)*w - lr*sign(clip(rescale_grad*grad))``.")
update_op("signum_update", _signum, ("mom",),
          dict(_COMMON, momentum=Param("float", 0.0, doc="Momentum of the sign's average."),
               wd_lh=Param("float", 0.0, doc="Decoupled weight decay.")),
          "Signum: ``mom = momentum*mom - (1-momentum)*(wd*w + g); w = (1 - lr*wd_lh)*w + lr*sign(mom)``.")
