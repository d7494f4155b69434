"""Adam and LAMB update operators: ``adam_update``, ``lamb_update_phase1``, ``lamb_update_phase2``.

``adam_update`` adds weight decay *before* clipping, and has no bias correction of its own (the
``Adam`` optimizer folds ``sqrt(1-beta2^t)/(1-beta1^t)`` into ``lr``)::

    g = clip(rescale_grad*grad + wd*w, clip_gradient)
    mean = beta1*mean + (1-beta1)*g;   var = beta2*var + (1-beta2)*g^2
    w = w - lr * mean / (sqrt(var) + epsilon)

LAMB (You et al., 2019) is two operators around two norms computed in between::

    phase1:  g = clip(rescale_grad*grad);  mean, var as above (bias-corrected by t when asked)
             out = mean_hat / (sqrt(var_hat) + epsilon) + wd*w          (the update direction)
    phase2:  r1 = clamp(norm(w), lower_bound, upper_bound);  r2 = norm(out of phase1)
             w = w - lr * (r1/r2 if r1 > 0 and r2 > 0 else 1) * g
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import Param, assign
from .common import CLIP, LAZY, LR, RESCALE, WD, preprocess, update_op, write

BETA1 = Param("float", 0.9, doc="Decay rate of the first moment.")
BETA2 = Param("float", 0.999, doc="Decay rate of the second moment.")


def _moments(g, mean, var, beta1, beta2):
    mean *= beta1
    mean += (1.0 - beta1) * g
    var *= beta2
    var += (1.0 - beta2) * g * g


def _adam(octx, params, inputs, outputs, req):
    w, grad, mean, var = inputs
    g = grad * params["rescale_grad"]
    g += w * params["wd"]
    if params["clip_gradient"] >= 0:
        np.clip(g, -params["clip_gradient"], params["clip_gradient"], out=g)
    _moments(g, mean, var, params["beta1"], params["beta2"])
    denom = np.sqrt(var)
    denom += params["epsilon"]
    step = np.multiply(mean, params["lr"], out=g)   # g is spent: reuse it as scratch
    step /= denom
    write(outputs[0], req[0], lambda dst: np.subtract(w, step, out=dst))


def _lamb_phase1(octx, params, inputs, outputs, req):
    w, grad, mean, var = inputs
    beta1, beta2 = params["beta1"], params["beta2"]
    g = preprocess(grad, params["rescale_grad"], params["clip_gradient"])
    _moments(g, mean, var, beta1, beta2)
    m, v = mean, var
    if params["bias_correction"]:
        t = params["t"]
        m = mean / (1.0 - beta1 ** t)
        v = var / (1.0 - beta2 ** t)
    assign(outputs[0], req[0], m / (np.sqrt(v) + params["epsilon"]) + params["wd"] * w)


def _lamb_phase2(octx, params, inputs, outputs, req):
    w, g, r1, r2 = inputs
    r1, r2 = float(r1.reshape(-1)[0]), float(r2.reshape(-1)[0])
    if params["lower_bound"] >= 0:
        r1 = max(r1, params["lower_bound"])
    if params["upper_bound"] >= 0:
        r1 = min(r1, params["upper_bound"])
    ratio = r1 / r2 if r1 != 0 and r2 != 0 else 1.0
    assign(outputs[0], req[0], w - (params["lr"] * ratio) * g)


def _phase2_shape(params, in_shapes):
    w = in_shapes[0] if in_shapes[0] is not None else in_shapes[1]
    for name, s in (("g", in_shapes[1]), ("r1", in_shapes[2]), ("r2", in_shapes[3])):
        want = w if name == "g" else (1,)
        if s is not None and want is not None and s != want:
            raise MXNetError(f"operator lamb_update_phase2: {name} has shape {s}, expected {want}")
    return [w, w, (1,), (1,)], [w]


update_op("adam_update", _adam, ("mean", "var"),
          {"lr": LR, "beta1": BETA1, "beta2": BETA2, "epsilon": Param("float", 1e-8), "wd": WD,
           "rescale_grad": RESCALE, "clip_gradient": CLIP, "lazy_update": LAZY},
          "Adam step without bias correction; weight decay is added to the gradient before clipping.")
update_op("lamb_update_phase1", _lamb_phase1, ("mean", "var"),
          {"beta1": BETA1, "beta2": BETA2, "epsilon": Param("float", 1e-6),
           "t": Param("int", doc="Update count (1 at the first update), for bias correction."),
           "bias_correction": Param("bool", True), "wd": Param("float"),
           "rescale_grad": RESCALE, "clip_gradient": CLIP},
          "LAMB phase 1: updates mean/var and returns the direction ``m/(sqrt(v)+eps) + wd*w``.")
update_op("lamb_update_phase2", _lamb_phase2, (),
          {"lr": LR, "lower_bound": Param("float", -1.0, doc="Lower clamp of norm(w); <0: none."),
           "upper_bound": Param("float", -1.0, doc="Upper clamp of norm(w); <0: none.")},
          "LAMB phase 2: ``w -= lr * (r1/r2) * g`` with the trust ratio of the two norms.",
          arguments=("weight", "g", "r1", "r2"), infer_shape=_phase2_shape)
