"""_contrib_SyncBatchNorm (``mx.nd.contrib.SyncBatchNorm``): BatchNorm whose batch statistics are
meant to be shared by the ``ndev`` devices that run one step, named by a common ``key``.

Math: ``BatchNorm_v1``'s (channel axis 1; the hidden ``var`` output holds the batch variance),
with ``mean`` and ``var`` taken over all devices' batches. With ``ndev=1`` (the default) that is
the one batch, and the operator is ``BatchNorm_v1`` with a ``key``. mxref does not synchronise
several devices: ``ndev > 1`` raises ``MXNetError``, so a multi-device step never silently
normalises with per-device statistics. Backward dependencies: ``(ograd, data, gamma, mean, var)``.
Kernels: numpy only, ``BatchNorm``'s.
"""
from __future__ import annotations

from ...base import MXNetError
from ..registry import OpDef, Param, register
from . import batch_norm as _bn
from . import batch_norm_v1 as _v1
from ._util import uniform_type

PARAMS = dict(_v1.PARAMS, ndev=Param("int", 1, doc="The number of devices that share statistics."),
              key=Param("str", doc="Names the statistics the devices share."))


def _validate(p):
    if p["ndev"] != 1:
        raise MXNetError(f"SyncBatchNorm: ndev={p['ndev']}: mxref computes batch statistics on one "
                         "device only (ndev=1)")


_SYNC = register(OpDef("_contrib_SyncBatchNorm", _v1.forward, arguments=["data", "gamma", "beta"],
                       aux_states=["moving_mean", "moving_var"], outputs=["output", "mean", "var"],
                       num_visible_outputs=lambda p: 3 if p["output_mean_var"] else 1, params=PARAMS,
                       infer_shape=_v1.infer_shape, infer_type=uniform_type(3),
                       gradient=_bn.gradient_to("_backward_contrib_SyncBatchNorm"), validate=_validate,
                       doc=__doc__))
_SYNC.input_var_attrs = _bn.BATCH_NORM.input_var_attrs
register(OpDef("_backward_contrib_SyncBatchNorm", _v1.backward,
               arguments=["ograd", "data", "gamma", "mean", "var"], outputs=["data", "gamma", "beta"],
               params=PARAMS, infer_type=uniform_type(3),
               infer_shape=lambda p, s: (list(s), [s[1], s[2], s[2]])))
