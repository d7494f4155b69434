"""``DataLoader``: batches from a Dataset, optionally loaded by worker processes.

With ``num_workers > 0`` the samples of each batch are read and stacked by forked worker
processes (``worker_pool.py``: a private pair of pipes per worker) into numpy arrays, which travel
back over the worker's result pipe; the main process turns them into NDArrays. Up to
``prefetch`` batches (default ``2 * num_workers``) are in flight, batches come out in sampler
order, and every wait for a worker has a deadline (``timeout``; ``worker_pool.py``).
"""
from __future__ import annotations

import collections
import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

import numpy as np

from ... import context
from ... import engine as _engine
from ... import ndarray as nd
from ...ndarray.ndarray import NDArray
from . import sampler as _sampler
from .worker_pool import WorkerPool

__all__ = ["DataLoader", "default_batchify_fn"]


def _stack_numpy(data):
    """The numpy half of batching: a sample list into stacked numpy arrays (per tuple field)."""
    if isinstance(data[0], NDArray):
        return np.stack([d.asnumpy() for d in data])
    if isinstance(data[0], tuple):
        return [_stack_numpy(list(field)) for field in zip(*data)]
    return np.asarray(data)


def _to_nd(batch):
    if isinstance(batch, list):
        return [_to_nd(b) for b in batch]
    if isinstance(batch, NDArray):
        return batch
    # NOTE: numpy samples keep their dtype (float64, int64), NDArray samples stay NDArray-typed,
    # as in MXNet 1.9.1.
    return nd.array(batch, dtype=batch.dtype)


def _pin(batch, device_id: int):
    """``pin_memory=True``: the batch's NDArrays on ``cpu_pinned(device_id)``, as MXNet's loader gives."""
    if isinstance(batch, (list, tuple)):
        return type(batch)(_pin(b, device_id) for b in batch)
    if isinstance(batch, NDArray):
        return batch.as_in_context(context.cpu_pinned(device_id))
    return batch


def default_batchify_fn(data):
    """Stack a list of samples into a batch: NDArrays with ``nd.stack``, tuples field by field,
    numbers and numpy arrays into one NDArray of their dtype."""
    if isinstance(data[0], NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    data = np.asarray(data)
    return nd.array(data, dtype=data.dtype)


# -- worker processes ------------------------------------------------------------------------
_worker_dataset = None


def _worker_initializer(dataset) -> None:
    """Runs first in each forked worker: keep the dataset, and use a synchronous engine.

    NOTE: the parent's engine threads do not survive ``fork``; an NDArray read in the worker
    (a dataset of NDArrays) must not wait on them, so the worker swaps in a NaiveEngine.
    """
    global _worker_dataset
    _worker_dataset = dataset
    _engine._engine = _engine._create("NaiveEngine")


def _worker_fn(indices, batchify_fn: Optional[Callable]):
    samples = [_worker_dataset[i] for i in indices]
    return _stack_numpy(samples) if batchify_fn is None else batchify_fn(samples)


class DataLoader:
    """Iterates over ``dataset`` in mini-batches.

    Parameters
    ----------
    dataset : Dataset
    batch_size : int
    shuffle : bool
        A new random order every epoch.
    sampler, batch_sampler : Sampler, optional
        Custom index order / batch grouping (exclusive with ``batch_size``/``shuffle``/``last_batch``).
    last_batch : {'keep', 'discard', 'rollover'}
        What to do with the last, short batch (default 'keep').
    batchify_fn : callable, optional
        Turns a list of samples into a batch (default: ``default_batchify_fn``).
    num_workers : int
        Worker processes (0: load in the main process).
    thread_pool : bool
        Use ``num_workers`` threads instead of processes.
    pin_memory, pin_device_id : bool, int
        Return batches on ``cpu_pinned(pin_device_id)``.
    auto_reload : bool
        Accepted for MXNet compatibility; workers start on the first iteration either way.
    prefetch : int, optional
        Batches loaded ahead by the workers (default ``2 * num_workers``).
    timeout : int
        Seconds to wait for a worker's batch before raising.
    """

    def __init__(self, dataset, batch_size: Optional[int] = None, shuffle: bool = False, sampler=None,
                 last_batch: Optional[str] = None, batch_sampler=None, batchify_fn=None, num_workers: int = 0,
                 pin_memory: bool = False, pin_device_id: int = 0, prefetch: Optional[int] = None,
                 thread_pool: bool = False, timeout: int = 120, auto_reload: bool = False):
        self._dataset = dataset
        self._pin = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                sampler = (_sampler.RandomSampler(len(dataset)) if shuffle
                           else _sampler.SequentialSampler(len(dataset)))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = _sampler.BatchSampler(sampler, batch_size, last_batch or "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must not be specified if "
                             "batch_sampler is specified.")
        self._batch_sampler = batch_sampler
        self._num_workers = max(0, int(num_workers))
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._batchify_fn = batchify_fn
        self._pool = None

    def __len__(self) -> int:
        return len(self._batch_sampler)

    def __iter__(self):
        if self._num_workers == 0:
            batchify = self._batchify_fn or default_batchify_fn
            batches = (batchify([self._dataset[i] for i in batch]) for batch in self._batch_sampler)
        elif self._thread_pool:
            batches = self._iter_threads()
        else:
            batches = self._iter_workers()
        for batch in batches:
            yield _pin(batch, self._pin_device_id) if self._pin else batch

    def _iter_threads(self):
        """``thread_pool=True``: threads of this process read and stack the samples (the dataset
        is shared, not copied); batches come out in sampler order."""
        batchify = self._batchify_fn or default_batchify_fn
        with ThreadPoolExecutor(self._num_workers) as threads:
            pending = collections.deque()
            batches = iter(self._batch_sampler)
            for batch in itertools.islice(batches, self._prefetch + 1):
                pending.append(threads.submit(self._load, batch, batchify))
            while pending:
                result = pending.popleft().result(self._timeout)
                nxt = next(batches, None)
                if nxt is not None:
                    pending.append(threads.submit(self._load, nxt, batchify))
                yield result

    def _load(self, indices, batchify):
        return batchify([self._dataset[i] for i in indices])

    def _iter_workers(self):
        if self._pool is None or self._pool.closed:
            # NOTE: fork only from an idle engine: an engine thread caught holding a lock (the
            # storage pool's, a variable's) would leave that lock held for ever in the workers.
            nd.waitall()
            self._pool = WorkerPool(self._num_workers, _worker_initializer, (self._dataset,),
                                    _worker_fn)
        pool, pending = self._pool, collections.deque()
        batches = iter(self._batch_sampler)
        try:
            for batch in itertools.islice(batches, self._prefetch + 1):
                pending.append(pool.submit(batch, self._batchify_fn))
            while pending:
                result = pool.get(pending.popleft(), self._timeout)
                nxt = next(batches, None)
                if nxt is not None:
                    pending.append(pool.submit(nxt, self._batchify_fn))
                yield _to_nd(result) if self._batchify_fn is None else result
        finally:
            if not pool.closed:
                pool.drop(pending)   # abandoned mid-epoch: their results are discarded

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            self._pool = None
            try:
                pool.close()
            except Exception:   # noqa: BLE001 - interpreter shutdown may have torn the pool down
                pass
