"""``mx.gluon.contrib.nn``: contributed layers."""
from .basic_layers import SparseEmbedding  # noqa: F401
from .concurrent import Concurrent, HybridConcurrent, Identity  # noqa: F401
from .sync_batch_norm import SyncBatchNorm  # noqa: F401

__all__ = ["SparseEmbedding", "Concurrent", "HybridConcurrent", "Identity", "SyncBatchNorm"]
