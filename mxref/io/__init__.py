"""Data iterators (``mx.io``): the ``DataIter`` contract, in-memory, CSV and MNIST readers, wrappers."""
from .base import DataBatch, DataDesc, DataIter
from .ndarray_iter import NDArrayIter

__all__ = ["DataBatch", "DataDesc", "DataIter", "NDArrayIter"]
