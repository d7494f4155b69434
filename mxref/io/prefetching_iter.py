"""``PrefetchingIter``: read the next batch on a background thread while the current one is used."""
from __future__ import annotations

import queue
import threading
from typing import Dict, List, Optional

from ..base import MXNetError
from .base import DataBatch, DataDesc, DataIter, WrappingIter

__all__ = ["PrefetchingIter"]

_FETCH, _STOP = "fetch", "stop"


class _Prefetcher:
    """One worker thread that answers each ``fetch`` request with ``it.next()``'s outcome.

    The protocol is one request, one answer: the consumer never has more than one fetch in flight,
    so it knows when the worker is idle and may reset the iterator from its own thread.
    """

    def __init__(self, it: DataIter, name: str):
        self.it = it
        self.requests: "queue.Queue[str]" = queue.Queue()
        self.answers: "queue.Queue[tuple]" = queue.Queue()
        self.in_flight = False
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while self.requests.get() == _FETCH:
            try:
                answer = ("batch", self.it.next())
            except StopIteration:
                answer = ("end", None)
            except BaseException as exc:  # noqa: B036 - handed to the consumer, re-raised there
                answer = ("error", exc)
            self.answers.put(answer)

    def request(self) -> None:
        if not self.in_flight:
            self.in_flight = True
            self.requests.put(_FETCH)

    def answer(self) -> tuple:
        """Wait for the fetch in flight (requesting one first if there is none)."""
        self.request()
        kind, value = self.answers.get()
        self.in_flight = False
        return kind, value

    def stop(self) -> None:
        self.requests.put(_STOP)


class PrefetchingIter(WrappingIter):
    """Prefetch batches of one or more iterators on background threads.

    Each inner iterator gets its own thread, which reads batch ``k+1`` while the caller works on
    batch ``k``. With several iterators their batches are joined: the data (and label) lists are
    concatenated, in iterator order. An exception raised by an inner iterator on its thread is
    re-raised in the caller's ``next`` (the same exception object, carrying the traceback of the
    thread where it happened).

    Parameters
    ----------
    iters : DataIter or list of DataIter
        The iterators to prefetch; they must yield the same number of batches.
    rename_data : list of dict, optional
        For iterator ``i``, a map ``{old name: new name}`` for its ``provide_data`` entries.
    rename_label : list of dict, optional
        The same for ``provide_label``.

    Examples
    --------
    >>> a = mx.io.NDArrayIter({'data': mx.nd.ones((100, 10))}, batch_size=25)
    >>> b = mx.io.NDArrayIter({'data': mx.nd.ones((100, 10))}, batch_size=25)
    >>> it = mx.io.PrefetchingIter([a, b], rename_data=[{'data': 'data_1'}, {'data': 'data_2'}])
    >>> [d.name for d in it.provide_data]
    ['data_1', 'data_2']
    """

    def __init__(self, iters, rename_data: Optional[List[Dict[str, str]]] = None,
                 rename_label: Optional[List[Dict[str, str]]] = None):
        super().__init__()
        if not isinstance(iters, (list, tuple)):
            iters = [iters]
        if not iters:
            raise MXNetError("PrefetchingIter: needs at least one iterator")
        self.iters = list(iters)
        self.n_iter = len(self.iters)
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0].shape[0]
        self.current_batch: Optional[DataBatch] = None
        self._ended = False
        self._workers = [_Prefetcher(it, f"PrefetchingIter-{i}") for i, it in enumerate(self.iters)]
        for w in self._workers:
            w.request()

    # -- descriptions ---------------------------------------------------------------------
    @staticmethod
    def _renamed(descs_per_iter, renames) -> List[DataDesc]:
        out = []
        for i, descs in enumerate(descs_per_iter):
            for d in descs:
                d = d if isinstance(d, DataDesc) else DataDesc(*d)
                name = renames[i][d.name] if renames is not None else d.name
                out.append(DataDesc(name, d.shape, d.dtype, d.layout))
        return out

    @property
    def provide_data(self) -> List[DataDesc]:
        return self._renamed([it.provide_data for it in self.iters], self.rename_data)

    @property
    def provide_label(self) -> List[DataDesc]:
        return self._renamed([it.provide_label for it in self.iters], self.rename_label)

    # -- iteration ------------------------------------------------------------------------
    def reset(self) -> None:
        """Wait for the fetches in flight, reset every inner iterator, and start prefetching again."""
        for w in self._workers:
            if w.in_flight:
                w.answer()   # an error of the abandoned epoch is dropped with its batch
        for it in self.iters:
            it.reset()
        self._ended = False
        for w in self._workers:
            w.request()

    def iter_next(self) -> bool:
        if self._ended:
            return False
        if not self._workers:
            raise MXNetError("PrefetchingIter: the iterator was closed")
        answers = [w.answer() for w in self._workers]
        for kind, value in answers:
            if kind == "error":
                # NOTE: the other workers are idle now (their answers were collected), so the
                # iterator stays consistent and reset() can be called after handling the error.
                raise value
        kinds = {kind for kind, _ in answers}
        if kinds == {"end"}:
            self._ended = True
            return False
        if len(kinds) != 1:
            raise MXNetError("PrefetchingIter: the inner iterators yield different numbers of batches")
        batches = [value for _, value in answers]
        pads = {b.pad for b in batches}
        if len(pads) != 1:
            raise MXNetError(f"PrefetchingIter: the inner iterators' batches differ in pad: {pads}")
        self.current_batch = DataBatch(sum((list(b.data) for b in batches), []),
                                       sum((list(b.label or []) for b in batches), []),
                                       batches[0].pad, batches[0].index,
                                       provide_data=self.provide_data,
                                       provide_label=self.provide_label)
        for w in self._workers:
            w.request()
        return True

    def close(self) -> None:
        """Stop the worker threads (they are daemons, so forgetting this never blocks exit)."""
        for w in self._workers:
            w.stop()
        for w in self._workers:
            if w.thread is not threading.current_thread():
                w.thread.join(timeout=5.0)
        self._workers = []

    def __del__(self):
        try:
            for w in self._workers:
                w.stop()
        except Exception:  # interpreter shutdown: nothing left to stop
            pass
