"""Datasets: ``Dataset`` (indexable samples plus transforms), ``SimpleDataset``, ``ArrayDataset``,
``RecordFileDataset``."""
from __future__ import annotations

from typing import Callable

from ...ndarray.ndarray import NDArray

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Anything with ``__getitem__(idx)`` and ``__len__``; subclasses give the samples."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def transform(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """A dataset whose samples are ``fn(*sample)`` (computed on access, or now if not ``lazy``)."""
        trans = _LazyTransformDataset(self, fn)
        return trans if lazy else SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """Like ``transform`` but only the first element of each sample (the data, not the label)."""
        def first(x, *args):
            return (fn(x),) + args if args else fn(x)
        return self.transform(first, lazy)

    def filter(self, fn: Callable) -> "Dataset":
        """The samples for which ``fn(sample)`` is true."""
        return SimpleDataset([self[i] for i in range(len(self)) if fn(self[i])])

    def take(self, count: int) -> "Dataset":
        """The first ``count`` samples (all when ``count`` is None or too large)."""
        n = len(self) if count is None or count > len(self) else count
        return SimpleDataset([self[i] for i in range(n)])

    def shard(self, num_shards: int, index: int) -> "Dataset":
        """Part ``index`` of ``num_shards`` contiguous parts (the first parts one longer when uneven)."""
        if not 0 <= index < num_shards:
            raise ValueError(f"Shard index {index} out of bound: [0, {num_shards - 1}]")
        each, extras = divmod(len(self), num_shards)
        start = index * each + min(index, extras)
        end = start + each + (index < extras)
        return SimpleDataset([self[i] for i in range(start, end)])


class SimpleDataset(Dataset):
    """A dataset over a list (or anything indexable with a length)."""

    def __init__(self, data):
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data: Dataset, fn: Callable):
        self._data, self._fn = data, fn

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        return self._fn(*item) if isinstance(item, tuple) else self._fn(item)


class ArrayDataset(Dataset):
    """Samples ``(a[i], b[i], ...)`` from arrays of equal length (one array: just ``a[i]``).

    One-dimensional NDArrays are kept as numpy arrays, so a label comes out as a scalar.
    """

    def __init__(self, *args):
        if not args:
            raise ValueError("Needs at least 1 arrays")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ValueError(f"All arrays must have the same length; array[0] has length "
                                 f"{self._length} while array[{i}] has {len(data)}.")
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(d[idx] for d in self._data)

    def __len__(self) -> int:
        return self._length



class RecordFileDataset(Dataset):
    """The raw records of a RecordIO file ``filename`` (``.rec``) with its index (``.idx`` beside it)."""

    def __init__(self, filename: str):
        import os

        from ...recordio import MXIndexedRecordIO
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._record = MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self) -> int:
        return len(self._record.keys)
