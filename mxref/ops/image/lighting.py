"""AlexNet-style PCA lighting noise of HWC / NHWC RGB images: ``adjust_lighting``, ``random_lighting``.

Math (``E``: ImageNet's RGB eigenvectors scaled by their eigenvalues, as in MXNet)::

    out[..., c] = saturate(x[..., c] + (E @ alpha)[c])      alpha ~ N(0, alpha_std^2) per channel

Grey (one-channel) images are returned unchanged.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..registry import OpDef, Param, assign, register
from ._common import need_image, saturate

EIG = (np.array([55.46, 4.794, 1.148])
       * np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])
       ).astype(np.float32)


def lighten(x: np.ndarray, alpha) -> np.ndarray:
    """``x`` plus the lighting offset of ``alpha`` (three numbers), saturated to ``x``'s dtype."""
    if x.shape[-1] == 1:
        return x.copy()
    return saturate(x.astype(np.float32) + EIG @ np.asarray(alpha, dtype=np.float32), x.dtype)


def _shape(op):
    def infer(p, s):
        need_image(op, s[0])
        return s, [s[0]]
    return infer


def _adjust(octx, p, inputs, outputs, req):
    if len(p["alpha"]) != 3:
        raise MXNetError(f"_image_adjust_lighting: 'alpha' needs 3 numbers (R, G, B), got {p['alpha']}")
    assign(outputs[0], req[0], lighten(inputs[0], p["alpha"]))


def _random(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], lighten(inputs[0], octx.rng.normal(0, p["alpha_std"], 3)))


register(OpDef("_image_adjust_lighting", _adjust, infer_shape=_shape("_image_adjust_lighting"),
               inplace=[(0, 0)], doc=__doc__,
               params={"alpha": Param("float_tuple", doc="The lighting alphas for the R, G, B channels.")}))
register(OpDef("_image_random_lighting", _random, infer_shape=_shape("_image_random_lighting"),
               inplace=[(0, 0)], resources=("random",), doc=__doc__,
               params={"alpha_std": Param("float", 0.05, doc="Level of the lighting noise.")}))
