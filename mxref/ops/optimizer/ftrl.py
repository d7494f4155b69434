"""``ftrl_update``: Follow-the-Regularized-Leader, proximal (McMahan et al., 2013).

With ``g = clip(rescale_grad*grad, clip_gradient)``::

    z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr
    n += g^2
    w = (sign(z)*lamda1 - z) / ((beta + sqrt(n)) / lr + wd)   where |z| > lamda1, else 0
"""
from __future__ import annotations

import numpy as np

from ..registry import Param, assign
from .common import CLIP, LR, RESCALE, WD, preprocess, update_op


def _ftrl(octx, params, inputs, outputs, req):
    w, grad, z, n = inputs
    lr, lamda1 = params["lr"], params["lamda1"]
    g = preprocess(grad, params["rescale_grad"], params["clip_gradient"])
    z += g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
    n += g * g
    new_w = (np.sign(z) * lamda1 - z) / ((params["beta"] + np.sqrt(n)) / lr + params["wd"])
    assign(outputs[0], req[0], new_w * (np.abs(z) > lamda1))


update_op("ftrl_update", _ftrl, ("z", "n"),
          {"lr": LR, "lamda1": Param("float", 0.01, doc="L1 regularization coefficient."),
           "beta": Param("float", 1.0, doc="Per-coordinate learning-rate parameter."), "wd": WD,
           "rescale_grad": RESCALE, "clip_gradient": CLIP},
          "FTRL-proximal step; ``z`` and ``n`` are its accumulated states.")
