"""``LibSVMIter``: CSR batches streamed from LibSVM files, with MXNet's ``round_batch`` and shard rules."""
from __future__ import annotations

import os
from typing import Iterator, List, Optional, Sequence

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..ndarray import NDArray
from ..ndarray import sparse as _sparse
from ..ndarray.ndarray import _from_numpy
from .base import DataBatch, DataDesc, DataIter
from .libsvm_reader import DEFAULT_CHUNK, CSRChunk, iter_part, part_bytes

__all__ = ["LibSVMIter"]


def _take(chunks: List[CSRChunk], pos: List[int], count: int) -> CSRChunk:
    """Remove the first ``count`` rows from the queue ``chunks`` (``pos[0]``: rows already taken
    from ``chunks[0]``) and return them as one chunk."""
    labels, datas, idxs, ptrs = [], [], [], [np.zeros(1, np.int64)]
    nnz = 0
    while count and chunks:
        c, start = chunks[0], pos[0]
        stop = min(len(c.labels), start + count)
        lo, hi = c.indptr[start], c.indptr[stop]
        labels.append(c.labels[start:stop])
        datas.append(c.data[lo:hi])
        idxs.append(c.indices[lo:hi])
        ptrs.append(c.indptr[start + 1:stop + 1] - lo + nnz)
        nnz += int(hi - lo)
        count -= stop - start
        if stop == len(c.labels):
            chunks.pop(0)
            pos[0] = 0
        else:
            pos[0] = stop
    return CSRChunk(np.concatenate(labels) if labels else np.zeros(0, np.float32),
                    np.concatenate(datas) if datas else np.zeros(0, np.float32),
                    np.concatenate(idxs) if idxs else np.zeros(0, np.int64), np.concatenate(ptrs))


def _join(a: CSRChunk, b: CSRChunk) -> CSRChunk:
    return CSRChunk(np.concatenate([a.labels, b.labels]), np.concatenate([a.data, b.data]),
                    np.concatenate([a.indices, b.indices]),
                    np.concatenate([a.indptr, b.indptr[1:] + a.indptr[-1]]))


class _Stream:
    """Rows of one file's part, pulled chunk by chunk from the reader as batches need them."""

    def __init__(self, path: str, num_features: int, span, chunk_bytes: int, what: str):
        self.args = (path, num_features)
        self.span, self.chunk_bytes, self.what = span, chunk_bytes, what
        self.restart()

    def restart(self) -> None:
        path, nfeat = self.args
        self._gen: Iterator[CSRChunk] = iter_part(path, nfeat, chunk_bytes=self.chunk_bytes,
                                                  what=self.what, span=self.span)
        self._chunks: List[CSRChunk] = []
        self._pos = [0]
        self._buffered = 0

    def take(self, count: int) -> CSRChunk:
        """Up to ``count`` rows (fewer only at the end of the part)."""
        while self._buffered < count:
            chunk = next(self._gen, None)
            if chunk is None:
                break
            self._chunks.append(chunk)
            self._buffered += len(chunk.labels)
        out = _take(self._chunks, self._pos, count)
        self._buffered -= len(out.labels)
        return out


class LibSVMIter(DataIter):
    """Iterate over a LibSVM file in CSR batches (``mx.io.LibSVMIter``).

    Each line ``label idx:val ...`` (zero-based indices) is one example; a batch's data is a
    ``CSRNDArray`` of shape ``(batch_size, data_shape[0])`` and its label the lines' labels,
    shape ``(batch_size,)``. With ``label_libsvm`` the labels are read from that file instead,
    one LibSVM line per example, as a ``CSRNDArray`` of shape ``(batch_size, label_shape[0])``.

    The file is streamed (``libsvm_reader.py``): memory stays in proportion to a chunk and a
    batch, not to the file. ``num_parts``/``part_index`` read one byte-range shard, cut on line
    boundaries as dmlc does; the shards cover every line exactly once.

    An epoch ends with a partial batch that (``round_batch=True``, the default) is completed with
    rows from the start of the part; ``pad`` counts them and the next epoch continues after them
    (a ``reset`` right after such a batch does not rewind), as MXNet's batch loader does. With
    ``round_batch=False`` the partial batch is completed with empty rows (label 0) and ``pad``
    counts them. NOTE: MXNet 1.9.1 refuses ``round_batch=False`` for this iterator ("sparse batch
    loader doesn't support round_batch == false yet"); mxref supports it.

    Parameters
    ----------
    data_libsvm : str
        The LibSVM file.
    data_shape : tuple of int
        ``(num_features,)``; every index must be below it.
    batch_size : int
        Examples per batch.
    label_libsvm : str, optional
        A LibSVM file of labels (``'NULL'``, the default: labels are the data lines' first tokens).
    label_shape : tuple of int, optional
        ``(num_label_features,)`` for ``label_libsvm``; ``(1,)`` by default.
    round_batch : bool, optional
        Complete the last batch by wrapping around (see above).
    num_parts, part_index : int, optional
        Read shard ``part_index`` of ``num_parts`` (distributed training: ``kv.num_workers``,
        ``kv.rank``).
    chunk_bytes : int, optional
        Bytes read at a time (1 MiB); mxref's own knob for the streaming window.
    """

    def __init__(self, data_libsvm: str, data_shape: Sequence[int], batch_size: int,
                 label_libsvm: str = "NULL", label_shape: Sequence[int] = (1,),
                 round_batch: bool = True, num_parts: int = 1, part_index: int = 0,
                 data_name: str = "data", label_name: str = "softmax_label",
                 chunk_bytes: int = DEFAULT_CHUNK, prefetch_buffer: int = 4, **kwargs):
        super().__init__(int(batch_size))
        # prefetch_buffer (and MXNet's dtype/ctx knobs in kwargs) tune MXNet's reader thread only.
        if self.batch_size < 1:
            raise MXNetError(f"LibSVMIter: batch_size must be positive, got {batch_size}")
        self.data_shape = tuple(int(d) for d in data_shape)
        self.label_shape = tuple(int(d) for d in label_shape)
        if len(self.data_shape) != 1 or self.data_shape[0] < 1:
            raise MXNetError(f"LibSVMIter: data_shape must be (num_features,), got {data_shape}")
        self.round_batch = bool(round_batch)
        self.data_name, self.label_name = data_name, label_name
        self._data = _Stream(data_libsvm, self.data_shape[0],
                             part_bytes(_exists(data_libsvm, "data_libsvm"), num_parts, part_index),
                             chunk_bytes, "data_libsvm")
        self._label: Optional[_Stream] = None
        if label_libsvm not in (None, "NULL"):
            if len(self.label_shape) != 1 or self.label_shape[0] < 1:
                raise MXNetError(f"LibSVMIter: label_shape must be (num_labels,) with label_libsvm, "
                                 f"got {label_shape}")
            self._label = _Stream(label_libsvm, self.label_shape[0],
                                  part_bytes(_exists(label_libsvm, "label_libsvm"), num_parts,
                                             part_index), chunk_bytes, "label_libsvm")
        bs = self.batch_size
        self.provide_data = [_desc(data_name, (bs, self.data_shape[0]), "csr")]
        if self._label is None:
            self.provide_label = [_desc(label_name, (bs,), "default")]
        else:
            self.provide_label = [_desc(label_name, (bs, self.label_shape[0]), "csr")]
        self._overflow = 0       # rows the last batch took from the start of the next pass
        self._ended = False
        self._batch = None       # (data CSRChunk, label CSRChunk or None, pad)

    # -- the protocol ----------------------------------------------------------------------------
    def reset(self) -> None:
        """Start the next epoch (after a wrapped-around batch: where that batch stopped)."""
        if not (self.round_batch and self._overflow):
            self._data.restart()
            if self._label is not None:
                self._label.restart()
        self._overflow = 0
        self._ended = False

    def iter_next(self) -> bool:
        self._batch = None
        if self._ended or self._overflow:
            self._ended = True
            return False
        bs = self.batch_size
        data = self._data.take(bs)
        label = self._label.take(bs) if self._label is not None else None
        got = len(data.labels)
        if label is not None and len(label.labels) != got:
            raise MXNetError(f"LibSVMIter: label_libsvm has {len(label.labels)} rows where "
                             f"data_libsvm has {got} in this batch; the files must pair up line by line")
        if got == 0:
            self._ended = True
            return False
        pad = bs - got
        if pad and self.round_batch:
            self._data.restart()
            more = self._data.take(pad)
            if len(more.labels) < pad:
                raise MXNetError(f"LibSVMIter: round_batch needs {pad} more rows but the part has "
                                 f"{got}; use a smaller batch_size")
            data = _join(data, more)
            if label is not None:
                self._label.restart()
                label = _join(label, self._label.take(pad))
            self._overflow = pad
        elif pad:
            data = _join(data, _empty_rows(pad))
            if label is not None:
                label = _join(label, _empty_rows(pad))
        self._batch = (data, label, pad)
        return True

    def next_csr(self):
        """The next batch as ``(data CSRChunk, label CSRChunk or None, pad)`` numpy triples,
        without building NDArrays (``StopIteration`` at the end of the epoch)."""
        if not self.iter_next():
            raise StopIteration
        return self._batch

    # NOTE: as MXNet's C++ iterators (MXDataIter), getdata/getlabel return one array, not a list;
    # the DataBatch that next() makes holds lists, as every iterator's does.
    def getdata(self) -> NDArray:
        return _csr(self._batch[0], (self.batch_size, self.data_shape[0]))

    def getlabel(self) -> NDArray:
        data, label, _ = self._batch
        if label is None:
            return _from_numpy(data.labels, cpu())
        return _csr(label, (self.batch_size, self.label_shape[0]))

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(),
                         index=self.getindex())

    def getpad(self) -> int:
        return self._batch[2]


def _exists(path: str, what: str) -> str:
    if not os.path.isfile(path):
        raise MXNetError(f"LibSVMIter: {what} {path!r} does not exist")
    return path


def _desc(name: str, shape, stype: str) -> DataDesc:
    desc = DataDesc(name, shape, np.float32)
    desc.stype = stype           # what the batch's arrays are (MXNet's DataDesc has no field for it)
    return desc


def _empty_rows(n: int) -> CSRChunk:
    return CSRChunk(np.zeros(n, np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64),
                    np.zeros(n + 1, np.int64))


def _csr(chunk: CSRChunk, shape) -> NDArray:
    return _sparse.csr_matrix((chunk.data, chunk.indices, chunk.indptr), shape=shape)
