"""``_adagrad_update`` and ``_adadelta_update``: mxref's one-operation kernels for AdaGrad and AdaDelta.

MXNet 1.x runs these two optimizers as several NDArray operations in Python; one fused operator
gives the same numbers (the same float32 operations in the same order) with one engine push.
Both clip the rescaled gradient *without* weight decay::

    _adagrad_update:   g = clip(rescale_grad*grad);  history += g^2
                       w = w + (g / sqrt(history + epsilon) + wd*w) * -lr
    _adadelta_update:  g = clip(rescale_grad*grad);  acc_g = rho*acc_g + (1-rho)*g^2
                       d = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g
                       acc_delta = rho*acc_delta + (1-rho)*d^2;   w = w - (d + wd*w)
"""
from __future__ import annotations

import numpy as np

from ..registry import Param, assign
from .common import CLIP, LR, RESCALE, WD, preprocess, update_op


def _adagrad(octx, params, inputs, outputs, req):
    w, grad, history = inputs
    g = preprocess(grad, params["rescale_grad"], params["clip_gradient"])
    history += np.square(g)
    div = g / np.sqrt(history + params["epsilon"])
    assign(outputs[0], req[0], w + (div + w * params["wd"]) * -params["lr"])


def _adadelta(octx, params, inputs, outputs, req):
    w, grad, acc_g, acc_delta = inputs
    rho, eps = params["rho"], params["epsilon"]
    g = preprocess(grad, params["rescale_grad"], params["clip_gradient"])
    acc_g *= rho
    acc_g += (1.0 - rho) * g * g
    delta = np.sqrt(acc_delta + eps) / np.sqrt(acc_g + eps) * g
    acc_delta *= rho
    acc_delta += (1.0 - rho) * delta * delta
    assign(outputs[0], req[0], w - (delta + params["wd"] * w))


update_op("_adagrad_update", _adagrad, ("history",),
          {"lr": LR, "epsilon": Param("float", 1e-7), "wd": WD, "rescale_grad": RESCALE,
           "clip_gradient": CLIP},
          "AdaGrad step: ``history += g^2; w += (g/sqrt(history + eps) + wd*w) * -lr``.")
update_op("_adadelta_update", _adadelta, ("acc_g", "acc_delta"),
          {"rho": Param("float", 0.9), "epsilon": Param("float", 1e-5), "wd": WD,
           "rescale_grad": RESCALE, "clip_gradient": CLIP},
          "AdaDelta step (no learning rate): see the module docstring.")
