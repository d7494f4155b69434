"""``_multi_lamb_update`` and ``_multi_mp_lamb_update``: LAMB over ``num_tensors`` weights at once.

Inputs per tensor, interleaved as MXNet lays them out: ``weight_i, grad_i, mean_i, var_i`` (and
``weight32_i``, the float32 master copy, in the mp form; mean and var are then float32 too).
``mean``, ``var`` and ``weight32`` are mutated; output ``i`` is the new ``weight_i``. For each
tensor, with ``t = step_count[i]``, ``lr = learning_rates[i]``, ``wd = wds[i]`` and ``w`` the
weight (the master copy in the mp form)::

    g = clip(rescale_grad*grad, clip_gradient)
    mean = beta1*mean + (1-beta1)*g;   var = beta2*var + (1-beta2)*g^2
    d = mean_hat / (sqrt(var_hat) + epsilon) + wd*w       (hats: divided by 1-beta^t when bias_correction)
    r1 = clamp(norm(w), lower_bound, upper_bound);  r2 = norm(d)
    w = w - lr * (r1/r2 if r1 > 0 and r2 > 0 else 1) * d

the same steps as ``lamb_update_phase1``, two ``norm``s and ``lamb_update_phase2`` per tensor.
The ``LAMB`` optimizer calls them on groups of up to ``aggregate_num`` weights. No gradients.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, register
from .adam import BETA1, BETA2, _moments
from .common import CLIP, RESCALE, preprocess
from .multi_sgd import _shape, _type

_F32 = np.dtype(np.float32)


def _lamb_one(p, i, w, grad, mean, var, dst):
    g = preprocess(grad, p["rescale_grad"], p["clip_gradient"], w.dtype)
    _moments(g, mean, var, p["beta1"], p["beta2"])
    m, v = mean, var
    if p["bias_correction"]:
        t = p["step_count"][i]
        m, v = mean / (1.0 - p["beta1"] ** t), var / (1.0 - p["beta2"] ** t)
    d = m / (np.sqrt(v) + p["epsilon"]) + p["wds"][i] * w
    r1, r2 = float(np.linalg.norm(w)), float(np.linalg.norm(d))
    if p["lower_bound"] >= 0:
        r1 = max(r1, p["lower_bound"])
    if p["upper_bound"] >= 0:
        r1 = min(r1, p["upper_bound"])
    ratio = r1 / r2 if r1 != 0 and r2 != 0 else 1.0
    np.subtract(w, (p["learning_rates"][i] * ratio) * d, out=dst, casting="same_kind")


def _kernel(stride: int, mp: bool):
    def kernel(octx, p, inputs, outputs, req):
        for i in range(p["num_tensors"]):
            w, grad, mean, var, *w32 = inputs[i * stride:(i + 1) * stride]
            if req[i] == "null":
                continue
            if mp:
                _lamb_one(p, i, w32[0], grad, mean, var, w32[0])
                np.copyto(outputs[i], w32[0], casting="same_kind")
            else:
                _lamb_one(p, i, w, grad, mean, var, outputs[i])
    return kernel


def _validate(name):
    def validate(p):
        n = p["num_tensors"]
        if n < 1:
            raise MXNetError(f"operator {name}: num_tensors must be >= 1, got {n}")
        for key in ("learning_rates", "wds", "step_count"):
            if len(p[key]) != n:
                raise MXNetError(f"operator {name}: argument '{key}' has {len(p[key])} values, but "
                                 f"num_tensors is {n}")
    return validate


_PARAMS = {
    "learning_rates": Param("float_tuple", doc="List of learning rates"),
    "beta1": BETA1, "beta2": BETA2,
    "epsilon": Param("float", 1e-6, doc="Small value to avoid division by 0."),
    "wds": Param("float_tuple", doc="List of Weight decays."), "rescale_grad": RESCALE,
    "lower_bound": Param("float", -1.0, doc="Lower limit of norm of weight; < 0: not set."),
    "upper_bound": Param("float", -1.0, doc="Upper limit of norm of weight; < 0: not set."),
    "clip_gradient": CLIP, "bias_correction": Param("bool", True, doc="Whether to use bias correction."),
    "step_count": Param("shape", doc="Step count for each tensor"),
    "num_tensors": Param("int", 1, doc="Number of tensors"),
}


def _register(name: str, names, n_f32: int) -> None:
    stride = len(names)
    states = [j for j, a in enumerate(names) if a in ("mean", "var", "weight32")]
    register(OpDef(
        name, _kernel(stride, n_f32 > 0),
        arguments=lambda p: [f"{a}_{i}" for i in range(p["num_tensors"]) for a in names],
        outputs=lambda p: [f"output{i}" for i in range(p["num_tensors"])],
        mutate=lambda p: [i * stride + j for i in range(p["num_tensors"]) for j in states],
        params=_PARAMS, validate=_validate(name),
        infer_shape=_shape(name, stride, False, "num_tensors"),
        infer_type=_type(name, stride, n_f32, False, "num_tensors"), inplace=[(0, 0)], doc=__doc__))


_register("_multi_lamb_update", ("weight", "grad", "mean", "var"), 0)
_register("_multi_mp_lamb_update", ("weight", "grad", "mean", "var", "weight32"), 3)
