"""``mx.gluon.contrib.nn``: contributed layers."""
from .basic_layers import SparseEmbedding  # noqa: F401
from .concurrent import Concurrent, HybridConcurrent, Identity  # noqa: F401
from .pixel_shuffle import PixelShuffle1D, PixelShuffle2D, PixelShuffle3D  # noqa: F401
from .sync_batch_norm import SyncBatchNorm  # noqa: F401

__all__ = ["SparseEmbedding", "Concurrent", "HybridConcurrent", "Identity", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]
