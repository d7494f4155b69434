"""``_contrib_MultiBoxPrior``: SSD anchor boxes for every cell of a feature map.

For data ``(N, C, H, W)`` and each cell ``(r, c)`` (row-major), centred at
``cy = (r + offsets[0]) * steps[0]``, ``cx = (c + offsets[1]) * steps[1]`` (steps default to
``1/H, 1/W``), the anchors are, in this order::

    sizes[i] with ratios[0], for every i;  then sizes[0] with ratios[j], for j >= 1
    w = size * H / W * sqrt(ratio) / 2,  h = size / sqrt(ratio) / 2
    box = [cx - w, cy - h, cx + w, cy + h]        (clipped to [0, 1] with clip=True)

Output ``(1, H * W * (len(sizes) + len(ratios) - 1), 4)``, shared by the batch. The anchors do
not depend on the data's values: the gradient is zero.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..elemwise import zero_grads
from ..nn._util import uniform_type
from ..registry import OpDef, Param, assign, register

PARAMS = {
    "sizes": Param("float_tuple", (1.0,), doc="List of sizes of generated MultiBoxPriores."),
    "ratios": Param("float_tuple", (1.0,), doc="List of aspect ratios of generated MultiBoxPriores."),
    "clip": Param("bool", False, doc="Whether to clip out-of-boundary boxes."),
    "steps": Param("float_tuple", (-1.0, -1.0), doc="Priorbox step across y and x, -1 for auto calculation."),
    "offsets": Param("float_tuple", (0.5, 0.5), doc="Priorbox center offsets, y and x respectively."),
}


def _validate(p):
    if not p["sizes"] or not p["ratios"]:
        raise MXNetError("MultiBoxPrior: 'sizes' and 'ratios' must not be empty")
    if len(p["steps"]) != 2 or len(p["offsets"]) != 2:
        raise MXNetError(f"MultiBoxPrior: 'steps' {p['steps']} and 'offsets' {p['offsets']} "
                         "need 2 values (y, x)")
    if not all(0 <= o <= 1 for o in p["offsets"]):
        raise MXNetError(f"MultiBoxPrior: 'offsets' {p['offsets']} must lie in [0, 1]")
    if p["steps"][0] * p["steps"][1] < 0:
        raise MXNetError(f"MultiBoxPrior: 'steps' {p['steps']}: give both step_y and step_x")


def infer_shape(p, in_shapes):
    s = in_shapes[0]
    if s is None:
        return [None], [None]
    if len(s) < 4:
        raise MXNetError(f"MultiBoxPrior: 'data' must be 4-D (batch, channel, y, x), got shape {tuple(s)}")
    return [s], [(1, s[2] * s[3] * (len(p["sizes"]) + len(p["ratios"]) - 1), 4)]


def anchors(h: int, w: int, p) -> np.ndarray:
    """``(h * w * A, 4)`` anchors in float32, computed as MXNet does (single precision)."""
    f = np.float32
    sy, sx = p["steps"]
    if sy <= 0 or sx <= 0:
        sy, sx = f(1) / f(h), f(1) / f(w)
    cy = (np.arange(h, dtype=f) + f(p["offsets"][0])) * f(sy)
    cx = (np.arange(w, dtype=f) + f(p["offsets"][1])) * f(sx)
    sizes, ratios = np.asarray(p["sizes"], f), np.asarray(p["ratios"], f)
    shapes = [(s, np.sqrt(ratios[0])) for s in sizes] + [(sizes[0], np.sqrt(r)) for r in ratios[1:]]
    half_w = np.array([s * f(h) / f(w) * r / f(2) for s, r in shapes], f)
    half_h = np.array([s / r / f(2) for s, r in shapes], f)
    gy, gx = np.meshgrid(cy, cx, indexing="ij")
    gx, gy = gx[:, :, None], gy[:, :, None]
    return np.stack([gx - half_w, gy - half_h, gx + half_w, gy + half_h], axis=-1).reshape(-1, 4)


def forward(octx, p, inputs, outputs, req):
    box = anchors(inputs[0].shape[2], inputs[0].shape[3], p)
    if p["clip"]:
        box = np.clip(box, 0, 1)
    assign(outputs[0], req[0], box.reshape(outputs[0].shape))


register(OpDef("_contrib_MultiBoxPrior", forward, params=PARAMS, infer_shape=infer_shape,
               infer_type=uniform_type(1), gradient=zero_grads, validate=_validate, doc=__doc__))
