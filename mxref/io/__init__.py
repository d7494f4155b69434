"""Data iterators (``mx.io``): the ``DataIter`` contract, in-memory, CSV, LibSVM and MNIST readers, wrappers.

``base.py`` (DataDesc, DataBatch, DataIter), ``ndarray_iter.py``, ``csv_iter.py``, ``mnist_iter.py``,
``resize_iter.py``, ``prefetching_iter.py`` and ``digits.py`` (the bundled handwritten digits);
``libsvm_iter.py`` over ``libsvm_reader.py`` (CSR batches streamed from LibSVM files).
"""
from .base import DataBatch, DataDesc, DataIter
from .csv_iter import CSVIter
from .digits import DigitsDataset, DigitsIter, load_digits
from .libsvm_iter import LibSVMIter
from .mnist_iter import MNISTIter
from .ndarray_iter import NDArrayIter
from .prefetching_iter import PrefetchingIter
from .resize_iter import ResizeIter

__all__ = ["DataBatch", "DataDesc", "DataIter", "NDArrayIter", "CSVIter", "MNISTIter", "ResizeIter",
           "PrefetchingIter", "DigitsIter", "DigitsDataset", "load_digits", "LibSVMIter"]
from .image_record_iter import ImageRecordIter  # noqa: E402

__all__ += ["ImageRecordIter"]
