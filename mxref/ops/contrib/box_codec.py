"""``_contrib_box_encode`` / ``_contrib_box_decode``: boxes as normalized centre offsets and back.

Encode (``anchors (B, N, 4)`` and ``refs (B, M, 4)`` corners, ``matches (B, N)`` an index into refs,
``samples (B, N)`` > 0.5 marking positives, ``means``/``stds (4,)``); with centre ``c`` and size ``s``::

    t = [(c_r - c_a) / s_a,  log(s_r / s_a)]        (x, y, then w, h)
    targets = (t - means) / stds  for positives, else 0;   masks = 1 for positives, else 0

Decode (``data (B, N, 4)`` offsets, ``anchors (1, N, 4)`` in ``format``)::

    c = data[:2] * std[:2] * s_a + c_a,   half = exp(min(data[2:] * std[2:], clip)) * s_a / 2
    out = [c - half, c + half]              (corners; ``clip <= 0`` disables the clip)

Both are constants for training in MXNet: the gradient is zero.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ..elemwise import zero_grads
from ..nn._util import uniform_type
from ..registry import OpDef, Param, assign, register
from ._box import format_param


def _centre(box, fmt="corner"):
    if fmt == "center":
        return box[..., :2], box[..., 2:4]
    size = box[..., 2:4] - box[..., :2]
    return box[..., :2] + size * 0.5, size


def encode_shape(p, in_shapes):
    samples, matches, anchors, refs = in_shapes[:4]
    for name, s, nd in (("samples", samples, 2), ("matches", matches, 2), ("anchors", anchors, 3),
                        ("refs", refs, 3)):
        if s is not None and (len(s) < nd or (nd == 3 and s[-1] not in (0, 4))):
            last = " with a last axis of 4" if nd == 3 else ""
            raise MXNetError(f"box_encode: '{name}' must be {nd}-D{last}, got {tuple(s)}")
    return list(in_shapes[:4]) + [(4,), (4,)], [anchors, anchors]


def encode(octx, p, inputs, outputs, req):
    samples, matches, anchors, refs, means, stds = inputs
    picked = np.take_along_axis(refs, matches.astype(np.int64)[..., None], axis=1)
    (rc, rs), (ac, as_) = _centre(picked), _centre(anchors)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (np.concatenate([(rc - ac) / as_, np.log(rs / as_)], axis=-1) - means) / stds
    valid = (samples > 0.5)[..., None]
    assign(outputs[0], req[0], np.where(valid, t, 0))
    assign(outputs[1], req[1], np.broadcast_to(valid, anchors.shape))


PARAMS = {**{f"std{i}": Param("float", 1.0, doc=f"Divisor of encoded value {i}.") for i in range(4)},
          "clip": Param("float", -1.0, doc="If > 0, the width/height offsets are clipped to it before exp."),
          "format": format_param("The anchors' encoding.")}
PARAMS["format"].default = "center"


def decode_shape(p, in_shapes):
    data, anchors = in_shapes
    for name, s in (("data", data), ("anchors", anchors)):
        if s is not None and (len(s) != 3 or s[-1] not in (0, 4)):
            raise MXNetError(f"box_decode: '{name}' must be 3-D with a last axis of 4, got {tuple(s)}")
    return list(in_shapes), [data]


def decode(octx, p, inputs, outputs, req):
    data, anchors = inputs
    ac, as_ = _centre(anchors, p["format"])
    std = np.array([p["std0"], p["std1"], p["std2"], p["std3"]], data.dtype)
    c = data[..., :2] * std[:2] * as_ + ac
    d = data[..., 2:4] * std[2:]
    if p["clip"] > 0:
        d = np.minimum(d, np.asarray(p["clip"], data.dtype))
    half = np.exp(d) * as_ * 0.5
    assign(outputs[0], req[0], np.concatenate([c - half, c + half], axis=-1))


register(OpDef("_contrib_box_encode", encode,
               arguments=("samples", "matches", "anchors", "refs", "means", "stds"),
               outputs=("output0", "output1"), infer_shape=encode_shape, infer_type=uniform_type(2),
               gradient=zero_grads, doc=__doc__))
register(OpDef("_contrib_box_decode", decode, arguments=("data", "anchors"), params=PARAMS,
               infer_shape=decode_shape, infer_type=uniform_type(1), gradient=zero_grads, doc=__doc__))
