"""``CSVIter``: batches of fixed-shape rows read from CSV files, with MXNet's ``round_batch`` rules."""
from __future__ import annotations

import os
from typing import Optional, Sequence, Tuple

import numpy as np

from ..base import MXNetError, normalize_dtype
from ..context import cpu
from ..ndarray import NDArray
from ..ndarray.ndarray import _from_numpy
from .base import DataBatch, DataDesc, DataIter

__all__ = ["CSVIter"]


def read_csv_rows(path: str, dtype: np.dtype, what: str) -> np.ndarray:
    """All rows of a CSV file, or of every file in a directory (in name order), as a 2-D array."""
    if os.path.isdir(path):
        files = [os.path.join(path, f) for f in sorted(os.listdir(path))]
        files = [f for f in files if os.path.isfile(f) and os.path.getsize(f) > 0]
    elif os.path.isfile(path):
        files = [path]
    else:
        raise MXNetError(f"CSVIter: {what} {path!r} does not exist")
    if not files:
        raise MXNetError(f"CSVIter: {what} {path!r} holds no non-empty file")
    try:
        parts = [np.loadtxt(f, delimiter=",", dtype=dtype, ndmin=2) for f in files]
    except ValueError as exc:
        raise MXNetError(f"CSVIter: cannot parse {what} {path!r} as {dtype.name}: {exc}") from None
    widths = {p.shape[1] for p in parts if p.size}
    if len(widths) > 1:
        raise MXNetError(f"CSVIter: the files of {what} {path!r} have different row lengths {widths}")
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def part_range(count: int, num_parts: int, part_index: int, who: str) -> Tuple[int, int]:
    """Rows ``[start, end)`` of part ``part_index`` when ``count`` rows are cut in ``num_parts``.

    The same arithmetic as MXNet's MNISTIter (in double precision), so shards tile the data
    exactly: every row belongs to one part.
    """
    if num_parts < 1 or not 0 <= part_index < num_parts:
        raise MXNetError(f"{who}: need 0 <= part_index < num_parts, got part_index={part_index}, "
                         f"num_parts={num_parts}")
    return int(count / num_parts * part_index), int(count / num_parts * (part_index + 1))


def _check_shape(rows: np.ndarray, shape: Tuple[int, ...], what: str) -> np.ndarray:
    need = int(np.prod(shape))
    if rows.shape[1] != need:
        raise MXNetError(f"CSVIter: a row of {what} has {rows.shape[1]} values but its shape "
                         f"{shape} needs {need}")
    return rows.reshape((rows.shape[0],) + shape)


class CSVIter(DataIter):
    """Iterate over CSV rows, each reshaped to ``data_shape`` (and ``label_shape``).

    The whole file is parsed into memory at construction (MXNet streams it; the batches are the
    same). An epoch ends with a partial batch that, by default (``round_batch=True``), is completed
    with rows from the start of the data; ``pad`` counts them, and the *next* epoch then continues
    after those rows instead of at the start (a ``reset`` right after such a batch does not
    rewind). With ``round_batch=False`` the partial batch is reported with ``pad`` filler rows whose
    contents are left over from the previous batch, and every epoch starts at the first row.

    Parameters
    ----------
    data_csv : str
        A CSV file, or a directory whose files are read in name order.
    data_shape : tuple of int
        Shape of one example; a row must hold ``prod(data_shape)`` values.
    label_csv : str, optional
        Labels, one row per data row; ``'NULL'`` (default) gives all-zero labels.
    label_shape : tuple of int, optional
        Shape of one label, ``(1,)`` by default (then the label batch is ``(batch_size,)``).
    batch_size : int
        Rows per batch.
    round_batch : bool, optional
        Complete the last batch by wrapping around (see above).
    num_parts, part_index : int, optional
        Read only part ``part_index`` of ``num_parts`` contiguous row ranges (for distributed
        training: ``num_parts=kv.num_workers, part_index=kv.rank``). NOTE: MXNet 1.9.1 accepts
        these two arguments for CSVIter but ignores them; mxref honours them.
    dtype : str, optional
        Type the values are parsed as (``'float32'`` unless given; e.g. ``'int32'``, ``'int64'``).
    data_name, label_name : str, optional
        Names in ``provide_data`` / ``provide_label``.
    """

    def __init__(self, data_csv: str, data_shape: Sequence[int], batch_size: int,
                 label_csv: str = "NULL", label_shape: Sequence[int] = (1,),
                 round_batch: bool = True, num_parts: int = 1, part_index: int = 0,
                 dtype: Optional[str] = None, data_name: str = "data",
                 label_name: str = "softmax_label", prefetch_buffer: int = 4, ctx: str = "gpu"):
        super().__init__(int(batch_size))
        if self.batch_size < 1:
            raise MXNetError(f"CSVIter: batch_size must be positive, got {batch_size}")
        # prefetch_buffer and ctx tune MXNet's C++ reader thread; the batches do not depend on them.
        self.dtype = np.dtype(np.float32) if dtype in (None, "None") else normalize_dtype(dtype)
        self.data_shape = tuple(int(d) for d in data_shape)
        self.label_shape = tuple(int(d) for d in label_shape)
        data = _check_shape(read_csv_rows(data_csv, self.dtype, "data_csv"), self.data_shape,
                            "data_csv")
        if label_csv == "NULL":
            label = np.zeros((len(data),) + self.label_shape, self.dtype)
        else:
            label = _check_shape(read_csv_rows(label_csv, self.dtype, "label_csv"),
                                 self.label_shape, "label_csv")
            if len(label) < len(data):
                raise MXNetError(f"CSVIter: label_csv has {len(label)} rows, fewer than the "
                                 f"{len(data)} rows of data_csv")
        start, end = part_range(len(data), num_parts, part_index, "CSVIter")
        self._data, self._label = data[start:end], label[start:end]
        self._first_row = start
        self.round_batch = bool(round_batch)
        self.data_name, self.label_name = data_name, label_name
        # One reused buffer per output, as MXNet's batch loader: rows a partial batch does not
        # overwrite keep the previous batch's values.
        bs = self.batch_size
        self._data_buf = np.zeros((bs,) + self.data_shape, self.dtype)
        self._label_buf = np.zeros((bs,) + self.label_shape, self.dtype)
        self._index_buf = np.zeros(bs, np.uint64)
        self._pos = 0        # next row to read
        self._overflow = 0   # rows taken from the start to complete the last batch
        self._pad = 0
        label_batch = (bs,) if self.label_shape == (1,) else (bs,) + self.label_shape
        self.provide_data = [DataDesc(data_name, (bs,) + self.data_shape, self.dtype.type)]
        self.provide_label = [DataDesc(label_name, label_batch, self.dtype.type)]

    @property
    def num_data(self) -> int:
        """Rows in this part of the data."""
        return len(self._data)

    def _copy_rows(self, top: int, first: int, count: int) -> None:
        rows = slice(first, first + count)
        self._data_buf[top:top + count] = self._data[rows]
        self._label_buf[top:top + count] = self._label[rows]
        self._index_buf[top:top + count] = np.arange(first, first + count) + self._first_row

    def reset(self) -> None:
        """Start the next epoch (after a wrapped-around batch: where that batch stopped)."""
        if not self.round_batch or self._overflow == 0:
            self._pos = 0
        self._overflow = 0

    def iter_next(self) -> bool:
        self._pad = 0
        if self._overflow:
            return False   # the wrapped-around batch ended this epoch
        bs, n = self.batch_size, self.num_data
        top = min(bs, n - self._pos)
        if top <= 0:
            return False
        self._copy_rows(0, self._pos, top)
        self._pos += top
        if top == bs:
            return True
        if self.round_batch:
            need = bs - top
            if need > n:
                raise MXNetError(f"CSVIter: round_batch needs at least batch_size - {top} = {need} "
                                 f"rows but there are {n}; use a smaller batch_size")
            self._copy_rows(top, 0, need)
            self._pos = self._overflow = self._pad = need
        else:
            self._pad = bs - top
        return True

    # NOTE: as MXNet's C++ iterators (MXDataIter), getdata/getlabel return one array, not a list;
    # the DataBatch that next() makes holds lists, as every iterator's does.
    def getdata(self) -> NDArray:
        return _from_numpy(self._data_buf, cpu())

    def getlabel(self) -> NDArray:
        return _from_numpy(self._label_buf.reshape(self.provide_label[0].shape), cpu())

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(),
                         index=self.getindex())

    def getpad(self) -> int:
        return self._pad

    def getindex(self) -> np.ndarray:
        return self._index_buf.copy()
