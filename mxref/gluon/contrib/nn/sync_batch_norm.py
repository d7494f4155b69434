"""``SyncBatchNorm``: cross-device batch norm, which on one process is ``BatchNorm`` over axis 1."""
from __future__ import annotations

from ...nn.basic_layers import BatchNorm


class SyncBatchNorm(BatchNorm):
    """``mx.gluon.contrib.nn.SyncBatchNorm``: MXNet's signature (``in_channels`` first,
    ``num_devices``), normalising over axis 1 with the same parameters as ``BatchNorm``.

    MXNet pools the batch statistics of ``num_devices`` GPUs through a shared key. mxref runs
    one executor per call on one process, so the statistics of the batch at hand are already the
    whole batch's and the layer computes exactly what ``BatchNorm`` computes; ``num_devices`` is
    recorded (default: the number of GPUs, at least 1) for code that reads it.
    """

    def __init__(self, in_channels: int = 0, num_devices=None, momentum: float = 0.9,
                 epsilon: float = 1e-5, center: bool = True, scale: bool = True,
                 use_global_stats: bool = False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)
        if num_devices is None:
            from ....context import num_gpus
            num_devices = max(num_gpus(), 1)
        self.num_devices = int(num_devices)
