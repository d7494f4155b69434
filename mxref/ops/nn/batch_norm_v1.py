"""BatchNorm_v1: MXNet's first BatchNorm, kept for old graphs; the channel axis is always 1.

Math: as ``BatchNorm`` (``batch_norm.py``) with ``axis=1`` (any data of 2 or more dims; MXNet's
kernel takes 4-d data only), except that the hidden ``var`` output
holds the batch variance itself (``BatchNorm`` keeps ``1 / sqrt(var + eps)`` there). Same
parameters but ``axis``, ``cudnn_off`` and the calibration ranges; same defaults (``eps=1e-3``,
``momentum=0.9``, ``fix_gamma=True``). Backward dependencies: ``_backward_BatchNorm_v1`` takes
``(ograd, data, gamma, mean, var)``. Kernels: numpy only, ``BatchNorm``'s.
"""
from __future__ import annotations

import numpy as np

from ..registry import OpDef, register
from . import batch_norm as _bn
from ._util import uniform_type

PARAMS = {k: v for k, v in _bn.PARAMS.items()
          if k not in ("axis", "cudnn_off", "min_calib_range", "max_calib_range")}


def _with_axis(p):
    return dict(p, axis=1)


def forward(octx, p, inputs, outputs, req):
    _bn.forward(octx, _with_axis(p), inputs, outputs, req)
    if req[2] != "null":              # invstd -> var
        outputs[2][...] = 1.0 / np.square(outputs[2]) - p["eps"]


def backward(octx, p, inputs, outputs, req):
    g, x, gamma, mean, var = inputs
    invstd = (1.0 / np.sqrt(var + p["eps"])).astype(var.dtype)
    _bn.backward(octx, _with_axis(p), [g, x, gamma, mean, invstd], outputs, req)


def infer_shape(p, in_shapes):
    return _bn.infer_shape(_with_axis(p), in_shapes)


_V1 = register(OpDef("BatchNorm_v1", forward, arguments=["data", "gamma", "beta"],
                     aux_states=["moving_mean", "moving_var"], outputs=["output", "mean", "var"],
                     num_visible_outputs=lambda p: 3 if p["output_mean_var"] else 1, params=PARAMS,
                     infer_shape=infer_shape, infer_type=uniform_type(3),
                     gradient=_bn.gradient_to("_backward_BatchNorm_v1"), doc=__doc__))
_V1.input_var_attrs = _bn.BATCH_NORM.input_var_attrs
register(OpDef("_backward_BatchNorm_v1", backward, arguments=["ograd", "data", "gamma", "mean", "var"],
               outputs=["data", "gamma", "beta"], params=PARAMS, infer_type=uniform_type(3),
               infer_shape=lambda p, s: (list(s), [s[1], s[2], s[2]])))
