"""``mp_lamb_update_phase1`` / ``mp_lamb_update_phase2``: LAMB's two phases on a float32 master copy.

For a float16 ``weight`` with its float32 master copy ``weight32`` (float32 ``mean``, ``var``)::

    phase1:  g32 = clip(float32(grad) * rescale_grad);  mean, var updated (float32)
             out = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight32        (float32)
    phase2:  r1 = clamp(r1, lower_bound, upper_bound);  ratio = r1/r2 (1 if either is 0)
             weight32 = weight32 - lr * ratio * g;   out = weight32 rounded to weight's dtype

NOTE: MXNet 1.9.1 declares ``weight32`` mutated by phase 2 but its kernel only writes the output,
so its master copy never moves and every step restarts from the first weights; this card writes
``weight32`` as the formula (and MXNet's documentation) says. No gradients.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, register
from .adam import BETA1, BETA2, _moments
from .common import CLIP, LR, RESCALE, preprocess

_F32 = np.dtype(np.float32)


def _phase1(octx, p, inputs, outputs, req):
    w, grad, mean, var, w32 = inputs
    g = preprocess(grad, p["rescale_grad"], p["clip_gradient"], _F32)
    _moments(g, mean, var, p["beta1"], p["beta2"])
    m, v = mean, var
    if p["bias_correction"]:
        m, v = mean / (1.0 - p["beta1"] ** p["t"]), var / (1.0 - p["beta2"] ** p["t"])
    if req[0] != "null":
        outputs[0][...] = m / (np.sqrt(v) + p["epsilon"]) + p["wd"] * w32


def _phase2(octx, p, inputs, outputs, req):
    w, g, r1, r2, w32 = inputs
    r1, r2 = float(r1.reshape(-1)[0]), float(r2.reshape(-1)[0])
    if p["lower_bound"] >= 0:
        r1 = max(r1, p["lower_bound"])
    if p["upper_bound"] >= 0:
        r1 = min(r1, p["upper_bound"])
    ratio = r1 / r2 if r1 != 0 and r2 != 0 else 1.0
    w32 -= (p["lr"] * ratio) * g
    if req[0] != "null":
        np.copyto(outputs[0], w32, casting="same_kind")


def _shape(name, scalars=()):
    def infer_shape(p, ins):
        known = next((s for k, s in enumerate(ins) if s is not None and k not in scalars), None)
        out = []
        for k, s in enumerate(ins):
            want = (1,) if k in scalars else known
            if s is not None and want is not None and s != want:
                raise MXNetError(f"operator {name}: input {k} has shape {s}, expected {want}")
            out.append(want)
        return out, [known]
    return infer_shape


def _type(name, out_f32: bool):
    def infer_type(p, ts):
        w = ts[0]
        if name.endswith("1") and ts[1] is not None and w is not None and ts[1] != w:
            raise MXNetError(f"operator {name}: grad dtype {ts[1].name} differs from weight dtype {w.name}")
        for k in range(2 if name.endswith("1") else 1, len(ts)):
            if ts[k] is not None and ts[k] != _F32:
                raise MXNetError(f"operator {name}: input {k} must be float32, got {ts[k].name}")
        first = [w, w] if name.endswith("1") else [w]
        return first + [_F32] * (len(ts) - len(first)), [_F32 if out_f32 else w]
    return infer_type


_BOUND = "Norm of weight below (above) which r1 is raised (lowered); < 0: not set."
register(OpDef(
    "mp_lamb_update_phase1", _phase1, arguments=("weight", "grad", "mean", "var", "weight32"),
    mutate=lambda p: [2, 3],
    params={"beta1": BETA1, "beta2": BETA2, "epsilon": Param("float", 1e-6),
            "t": Param("int", doc="Index update count."), "bias_correction": Param("bool", True),
            "wd": Param("float"), "rescale_grad": RESCALE, "clip_gradient": CLIP},
    infer_shape=_shape("mp_lamb_update_phase1"), infer_type=_type("mp_lamb_update_phase1", True),
    doc="Mixed-precision LAMB phase 1: the float32 direction (see the module docstring).\n\n" + __doc__))
register(OpDef(
    "mp_lamb_update_phase2", _phase2, arguments=("weight", "g", "r1", "r2", "weight32"),
    mutate=lambda p: [4],
    params={"lr": LR, "lower_bound": Param("float", -1.0, doc=_BOUND),
            "upper_bound": Param("float", -1.0, doc=_BOUND)},
    infer_shape=_shape("mp_lamb_update_phase2", scalars=(2, 3)),
    infer_type=_type("mp_lamb_update_phase2", False), inplace=[(0, 0)],
    doc="Mixed-precision LAMB phase 2: the step on weight32, rounded into the weight.\n\n" + __doc__))
