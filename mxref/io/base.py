"""The data-iterator contract: ``DataDesc`` (what an input is), ``DataBatch`` (one batch), ``DataIter``."""
from __future__ import annotations

from collections import namedtuple
from typing import List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["DataDesc", "DataBatch", "DataIter", "WrappingIter"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, dtype and layout of one data or label input.

    It is a ``(name, shape)`` tuple, so code that unpacks ``provide_data`` as pairs keeps working;
    ``dtype`` and ``layout`` ride along as attributes. ``layout`` says how to read the axes:
    ``'NCHW'`` for images (N = batch, C = channels), ``'NTC'`` for sequences (T = time).

    Parameters
    ----------
    name : str
        Input name, as the symbol's variable that will receive it (``'data'``, ``'softmax_label'``).
    shape : tuple of int
        Shape of one batch of this input.
    dtype : numpy type, optional
        Element type, ``numpy.float32`` unless given.
    layout : str, optional
        Axis meaning, ``'NCHW'`` unless given.
    """

    def __new__(cls, name: str, shape: Tuple[int, ...], dtype=np.float32, layout: str = "NCHW"):
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self) -> str:
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    def __getnewargs__(self):
        # Pickle dtype and layout too (the tuple part alone would lose them).
        return (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout: Optional[str]) -> int:
        """The axis that holds the batch (the position of ``'N'`` in ``layout``; 0 when no layout).

        Returns -1 when the layout has no ``'N'``: such an input is copied whole to every device
        instead of being split along a batch axis.
        """
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes: Sequence[Tuple[str, Tuple[int, ...]]],
                 types: Optional[Sequence[Tuple[str, object]]]) -> List["DataDesc"]:
        """``DataDesc`` list from ``[(name, shape)]`` and, optionally, ``[(name, dtype)]``."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        type_of = dict(types)
        return [DataDesc(name, shape, type_of[name]) for name, shape in shapes]


class DataBatch:
    """One batch: lists of data and label NDArrays plus bookkeeping.

    Parameters
    ----------
    data : list of NDArray
        One array per data input, each holding ``batch_size`` examples.
    label : list of NDArray, optional
        One array per label input.
    pad : int, optional
        How many examples at the end of the batch are filler (the last batch of an epoch that did
        not divide evenly); predictions for them must be dropped.
    index : numpy.ndarray, optional
        Indices of the examples in this batch, when the iterator knows them.
    bucket_key : optional
        The bucket this batch belongs to (bucketing modules bind one executor per key).
    provide_data, provide_label : list of DataDesc, optional
        Descriptions of ``data`` / ``label`` when they differ from the iterator's.
    """

    def __init__(self, data, label=None, pad: Optional[int] = None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError("DataBatch: data must be a list of NDArrays")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError("DataBatch: label must be a list of NDArrays")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lab.shape for lab in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


class DataIter:
    """Base class of every iterator: ``next()`` returns a ``DataBatch`` or raises ``StopIteration``.

    A subclass implements either ``next`` or the four-step protocol ``iter_next`` (advance, True if
    there is a batch) plus ``getdata`` / ``getlabel`` / ``getpad`` (read the current batch). It
    also sets ``provide_data`` / ``provide_label`` (lists of ``DataDesc``) so a module can bind
    before seeing data, and implements ``reset`` to start the next epoch.

    Parameters
    ----------
    batch_size : int, optional
        Number of examples per batch.
    """

    def __init__(self, batch_size: int = 0):
        self.batch_size = batch_size

    def __iter__(self) -> "DataIter":
        return self

    def reset(self) -> None:
        """Go back to the start of the data (the next epoch)."""

    def next(self) -> DataBatch:
        """The next batch; raises ``StopIteration`` at the end of the epoch."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self) -> DataBatch:
        return self.next()

    def iter_next(self) -> bool:
        """Advance to the next batch; False when the epoch is over."""
        raise NotImplementedError(f"{type(self).__name__} implements neither next nor iter_next")

    def getdata(self):
        """The data arrays of the current batch."""
        raise NotImplementedError(f"{type(self).__name__}.getdata")

    def getlabel(self):
        """The label arrays of the current batch."""
        raise NotImplementedError(f"{type(self).__name__}.getlabel")

    def getindex(self):
        """Indices of the current batch's examples, or None when the iterator does not track them."""
        return None

    def getpad(self) -> int:
        """Number of filler examples at the end of the current batch."""
        raise NotImplementedError(f"{type(self).__name__}.getpad")


class WrappingIter(DataIter):
    """Base of iterators built on other iterators: ``iter_next`` stores a whole ``DataBatch`` in
    ``current_batch`` and every accessor reads it (``ResizeIter``, ``PrefetchingIter``)."""

    current_batch: DataBatch = None

    def next(self) -> DataBatch:
        """The stored batch itself, so fields such as ``bucket_key`` survive."""
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self) -> int:
        return self.current_batch.pad
