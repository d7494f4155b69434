"""``NDArrayIter``: batches from in-memory arrays, with MXNet's three ways to end an epoch."""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from ..base import MXNetError
from ..context import Context
from ..ndarray import NDArray
from ..ndarray import array as _nd_array
from ..ndarray.ndarray import _empty
from ..ndarray.sparse import _from_value as _sparse_from_value
from ..ops.sparse.base import CSR
from .base import DataBatch, DataDesc, DataIter

__all__ = ["NDArrayIter"]

_LAST_BATCH_MODES = ("pad", "discard", "roll_over")


class _Source:
    """One named input: a host view of its values and the context its batches are made on."""

    __slots__ = ("name", "array", "host", "ctx")

    def __init__(self, name: str, array: NDArray):
        self.name = name
        self.array = array
        self.ctx: Context = array.context
        # Batches are gathered on the host; for a CPU array the host view costs nothing. A csr
        # array stays csr (its dense form may not fit in memory): its rows are gathered as csr.
        array.wait_to_read()
        if array.stype == "csr":
            self.host = array._value()
        elif array._sparse:
            raise MXNetError(f"NDArrayIter: input {name!r} is {array.stype}; only csr and dense "
                             "inputs are supported (as in MXNet)")
        else:
            self.host = array._data() if array.context.device_type == "cpu" else array.asnumpy()


def _init_sources(data, allow_empty: bool, default_name: str, what: str) -> List[_Source]:
    """MXNet's canonical form: a list of named arrays, dict inputs sorted by key."""
    if data is None:
        if not allow_empty:
            raise MXNetError(f"NDArrayIter: {what} must not be None")
        return []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not data and not allow_empty:
            raise MXNetError(f"NDArrayIter: {what} must not be empty")
        if len(data) == 1:
            data = {default_name: data[0]}
        else:
            # NOTE: several unnamed arrays become '_0_data', '_1_data', ... exactly as in MXNet.
            data = {f"_{i}_{default_name}": d for i, d in enumerate(data)}
    if not isinstance(data, dict):
        raise MXNetError(f"NDArrayIter: {what} must be an NDArray, a numpy array, a list of them or "
                         f"a dict of them, got {type(data).__name__}")
    sources = []
    for name in sorted(data):
        value = data[name]
        # NDArrays keep their dtype and are not copied; anything else becomes float32 (mx.nd.array).
        arr = value if isinstance(value, NDArray) else _nd_array(value)
        sources.append(_Source(name, arr))
    return sources


def take_csr_rows(host: CSR, positions: np.ndarray) -> CSR:
    """The rows ``positions`` of a csr matrix, as csr (vectorised: no loop over rows)."""
    positions = np.asarray(positions, np.int64)
    starts, lengths = host.indptr[positions], np.diff(host.indptr)[positions]
    indptr = np.zeros(positions.size + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    # Entry t of the batch comes from starts[row of t] + (t - indptr[row of t]).
    src = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1], dtype=np.int64)
    return CSR(host.data[src], host.indices[src], indptr, (positions.size, host.shape[1]))


def take_batch(host: np.ndarray, positions: np.ndarray, axis: int, ctx: Context) -> NDArray:
    """A new NDArray on ``ctx`` holding ``host``'s examples ``positions`` along ``axis`` (one copy);
    a csr ``host`` gives a CSRNDArray."""
    if isinstance(host, CSR):
        return _sparse_from_value(take_csr_rows(host, positions), ctx, host.data.dtype)
    shape = host.shape[:axis] + (len(positions),) + host.shape[axis + 1:]
    out = _empty(shape, ctx, host.dtype)
    # A fresh array has nothing queued on its variable, so it may be written right here.
    # mode='clip' lets numpy write straight into ``out`` (positions are always in range).
    np.take(host, positions, axis=axis, out=out._data(), mode="clip")
    return out


class NDArrayIter(DataIter):
    """Iterate over NDArrays or numpy arrays in batches.

    Parameters
    ----------
    data : array, list of arrays or dict of name -> array
        The inputs. A dict is ordered by key; a list of several arrays is named ``_0_data``,
        ``_1_data``, ...; numpy input becomes float32 (as ``mx.nd.array``), NDArrays keep their dtype.
    label : same forms as ``data``, optional
        The labels (named ``softmax_label`` by default).
    batch_size : int
        Examples per batch.
    shuffle : bool
        Shuffle the examples at construction and at every ``reset`` (with ``numpy.random``, so
        ``np.random.seed`` reproduces MXNet's order).
    last_batch_handle : {'pad', 'discard', 'roll_over'}
        What to do with the last, incomplete batch: ``'pad'`` fills it by wrapping around to the
        start and reports the filler count in ``batch.pad``; ``'discard'`` drops it; ``'roll_over'``
        drops it now and starts the next epoch with those examples (``pad`` of that first batch
        is then the number of rolled-over examples, as in MXNet).
    data_name, label_name : str
        Names used when ``data`` / ``label`` are not dicts.
    layout : str
        Data layout; the batch axis is the position of ``'N'``.

    Examples
    --------
    >>> it = mx.io.NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5), batch_size=2)
    >>> [b.pad for b in it]
    [0, 0, 1]
    """

    def __init__(self, data, label=None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data",
                 label_name: str = "softmax_label", layout: str = "NCHW"):
        super().__init__(batch_size)
        if last_batch_handle not in _LAST_BATCH_MODES:
            raise MXNetError(f"NDArrayIter: last_batch_handle must be one of {_LAST_BATCH_MODES}, "
                             f"got {last_batch_handle!r}")
        if int(batch_size) < 1:
            raise MXNetError(f"NDArrayIter: batch_size must be positive, got {batch_size}")
        if "N" not in layout:
            raise MXNetError(f"NDArrayIter: layout {layout!r} has no batch axis 'N'")
        self.layout = layout
        self._axis = layout.find("N")
        self._data_src = _init_sources(data, False, data_name, "data")
        self._label_src = _init_sources(label, True, label_name, "label")
        # MXNet's public form: lists of (name, NDArray), dict inputs sorted by name.
        self.data = [(s.name, s.array) for s in self._data_src]
        self.label = [(s.name, s.array) for s in self._label_src]
        self.num_data = self._count_examples()
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.idx = np.arange(self.num_data)     # the permutation numpy shuffles in place
        self._order = np.arange(self.num_data)  # original index of each example, in epoch order
        self._rolled: Optional[np.ndarray] = None
        self.cursor = -self.batch_size
        self.reset()

    def _count_examples(self) -> int:
        sources = self._data_src + self._label_src
        for src in sources:
            if src.host.ndim <= self._axis:
                raise MXNetError(f"NDArrayIter: input {src.name!r} of shape {src.host.shape} has no "
                                 f"batch axis {self._axis} (layout {self.layout!r})")
        # As in MXNet, the first data array sets the number of examples; longer arrays beside it
        # are read only up to that many (their tail never appears), shorter ones cannot serve.
        n = sources[0].host.shape[self._axis]
        for src in sources[1:]:
            if src.host.shape[self._axis] < n:
                raise MXNetError(f"NDArrayIter: input {src.name!r} has {src.host.shape[self._axis]} "
                                 f"examples but {sources[0].name!r} has {n}")
        return n

    # -- descriptions ---------------------------------------------------------------------
    def _describe(self, sources: List[_Source]) -> List[DataDesc]:
        descs = []
        for src in sources:
            shape = list(src.host.shape)
            shape[self._axis] = self.batch_size
            descs.append(DataDesc(src.name, tuple(shape), src.host.dtype.type, layout=self.layout))
        return descs

    @property
    def provide_data(self) -> List[DataDesc]:
        """Name, batch shape, dtype and layout of each data input."""
        return self._describe(self._data_src)

    @property
    def provide_label(self) -> List[DataDesc]:
        """Name, batch shape, dtype and layout of each label input."""
        return self._describe(self._label_src)

    # -- epochs ---------------------------------------------------------------------------
    def _shuffle(self) -> None:
        # MXNet shuffles its index array in place and re-gathers the already shuffled data with
        # it, so successive permutations compose; doing the same keeps its numbers under a seed.
        np.random.shuffle(self.idx)
        self._order = self._order[self.idx]

    def hard_reset(self) -> None:
        """Start the next epoch from the beginning, dropping any rolled-over examples."""
        if self.shuffle:
            self._shuffle()
        self.cursor = -self.batch_size
        self._rolled = None

    def reset(self) -> None:
        """Start the next epoch; in ``'roll_over'`` mode it begins with last epoch's leftovers."""
        n, bs = self.num_data, self.batch_size
        self._rolled = None
        if self.last_batch_handle == "roll_over" and n - bs < self.cursor < n:
            # The leftovers are taken in the old order, before this epoch's shuffle.
            self._rolled = self._order[self.cursor:]
            self.cursor = self.cursor - n - bs
        else:
            self.cursor = -bs
        if self.shuffle:
            self._shuffle()

    def iter_next(self) -> bool:
        """Advance the cursor by one batch; False past the end of the data."""
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self) -> DataBatch:
        """The next full batch (``StopIteration`` at the end, or at an incomplete last batch)."""
        if not self.iter_next():
            raise StopIteration
        positions = self._positions()
        if len(positions) != self.batch_size:
            # 'discard' and 'roll_over' stop here; reset() picks the leftovers up for roll_over.
            raise StopIteration
        return DataBatch(data=self._gather(self._data_src, positions),
                         label=self._gather(self._label_src, positions), pad=self.getpad(), index=None)

    # -- the current batch ----------------------------------------------------------------
    def _positions(self) -> np.ndarray:
        """Original indices of the examples in the batch at ``cursor``."""
        n, bs, cur = self.num_data, self.batch_size, self.cursor
        if cur >= n:
            raise MXNetError("NDArrayIter: the epoch is over, call reset()")
        if self.last_batch_handle == "roll_over" and -bs < cur < 0:
            if self._rolled is None:
                raise MXNetError("NDArrayIter: no rolled-over examples for this epoch's first batch")
            return np.concatenate([self._rolled, self._order[:cur + bs]])
        if self.last_batch_handle == "pad" and cur + bs > n:
            # Wrap around to the start, as many times as needed when batch_size > num_data.
            wrap = self._order[np.arange(cur + bs - n) % n]
            return np.concatenate([self._order[cur:], wrap])
        return self._order[cur:min(cur + bs, n)]

    def _gather(self, sources: List[_Source], positions: np.ndarray) -> List[NDArray]:
        return [take_batch(src.host, positions, self._axis, src.ctx) for src in sources]

    def getdata(self) -> List[NDArray]:
        """Data arrays of the current batch."""
        return self._gather(self._data_src, self._positions())

    def getlabel(self) -> List[NDArray]:
        """Label arrays of the current batch."""
        return self._gather(self._label_src, self._positions())

    def getpad(self) -> int:
        """Filler examples in the current batch (see ``last_batch_handle``)."""
        bs, cur = self.batch_size, self.cursor
        if self.last_batch_handle == "pad" and cur + bs > self.num_data:
            return cur + bs - self.num_data
        if self.last_batch_handle == "roll_over" and -bs < cur < 0:
            return -cur
        return 0

    def __repr__(self) -> str:
        shapes: Tuple = tuple(d.shape for d in self.provide_data)
        return f"<NDArrayIter {self.num_data} examples, batches {shapes}, {self.last_batch_handle}>"
