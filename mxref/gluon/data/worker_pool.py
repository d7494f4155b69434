"""The DataLoader's worker processes: a private pair of pipes per worker, no lock shared between
processes, no helper thread in the main process, and a deadline on every wait for a worker.

Why not ``multiprocessing.Pool``: its workers share one result queue guarded by one cross-process
lock. A worker writing a batch larger than the pipe holds that lock until the main process reads;
``Pool.terminate()`` with batches in flight stops reading and then takes the same lock to post its
sentinel, so the main process and the worker wait on each other for ever (MXNet's
``test_multi_worker_dataloader_release_pool`` scenario). The pool's three handler threads also
hold locks at the moment a later pool forks. Here each worker has its own task pipe and result
pipe, the main process reads results only while it waits for one (with a deadline), and releasing
the pool closes the pipes and terminates the workers, which never blocks.
"""
from __future__ import annotations

import collections
import multiprocessing
import os
import time
import traceback
from multiprocessing.connection import wait as _wait
from multiprocessing.reduction import ForkingPickler
from typing import Callable

from ...base import MXNetError

__all__ = ["WorkerPool"]

# A worker is handed another task only while the tasks it has not answered fit in this many bytes,
# well under a pipe's capacity (64 KiB on Linux), so sending a task never blocks on a busy worker.
_QUEUED_BYTES = 16384


def _release_timeout() -> float:
    return float(os.environ.get("MXREF_DATALOADER_RELEASE_TIMEOUT", "10"))


def _worker_loop(tasks, results, main_ends, initializer: Callable, initargs: tuple, fn: Callable):
    """A worker's whole life: answer ``(task_id, args)`` messages with ``(task_id, ok, value)``
    until the task pipe closes (or the main process stops reading)."""
    for end in main_ends:           # the main process's ends, inherited through fork
        end.close()
    initializer(*initargs)
    while True:
        try:
            task_id, args = tasks.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ForkingPickler.dumps((task_id, True, fn(*args)))
        except BaseException as exc:   # noqa: BLE001 - every failure goes back to the main process
            text = "".join(traceback.format_exception(exc))
            try:
                reply = ForkingPickler.dumps((task_id, False, (exc, text)))
            except Exception:          # noqa: BLE001 - an exception that cannot be pickled
                reply = ForkingPickler.dumps((task_id, False, (None, text)))
        try:
            results.send_bytes(reply)
        except OSError:                # BrokenPipeError: the pool was released
            return


class WorkerPool:
    """``num_workers`` forked processes that run ``fn(*args)`` for :meth:`submit`.

    ``initializer(*initargs)`` runs first in each worker. Forking happens here, from the caller's
    thread; the caller makes sure no lock its workers need is held (the DataLoader waits for the
    engine to be idle first).
    """

    def __init__(self, num_workers: int, initializer: Callable, initargs: tuple, fn: Callable):
        ctx = multiprocessing.get_context("fork")
        self._procs, self._task_ends, self._result_ends = [], [], []
        for _ in range(num_workers):
            task_r, task_w = ctx.Pipe(duplex=False)
            result_r, result_w = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker_loop, daemon=True,
                               args=(task_r, result_w, (task_w, result_r), initializer, initargs, fn))
            proc.start()
            task_r.close()
            result_w.close()
            self._procs.append(proc)
            self._task_ends.append(task_w)
            self._result_ends.append(result_r)
        self._queued = [{} for _ in range(num_workers)]  # per worker: task id -> bytes, unanswered
        self._backlog = collections.deque()               # (task id, message) not yet sent
        self._results = {}                                # task id -> (ok, value)
        self._dropped = set()                             # task ids nobody will ask for
        self._next_id = 0
        self.closed = False

    def submit(self, *args) -> int:
        """Queue ``fn(*args)``; returns the task id to pass to :meth:`get`."""
        task_id, self._next_id = self._next_id, self._next_id + 1
        self._backlog.append((task_id, ForkingPickler.dumps((task_id, args))))
        self._send_backlog()
        return task_id

    def _send_backlog(self) -> None:
        while self._backlog:
            task_id, msg = self._backlog[0]
            free = [w for w, q in enumerate(self._queued)
                    if not q or sum(q.values()) + len(msg) <= _QUEUED_BYTES]
            if not free:
                return
            w = min(free, key=lambda i: len(self._queued[i]))
            self._backlog.popleft()
            try:
                self._task_ends[w].send_bytes(msg)
            except OSError as exc:
                raise self._dead(w, task_id) from exc
            self._queued[w][task_id] = len(msg)

    def get(self, task_id: int, timeout: float):
        """The result of task ``task_id``, waiting at most ``timeout`` seconds; a worker's exception
        is re-raised here, and a worker that died or did not answer in time is an MXNetError."""
        deadline = time.monotonic() + timeout
        while task_id not in self._results:
            self._send_backlog()
            busy = [w for w, q in enumerate(self._queued) if q]
            left = deadline - time.monotonic()
            if left <= 0 or not busy:
                owner = next((w for w in busy if task_id in self._queued[w]), None)
                pid = self._procs[owner].pid if owner is not None else "?"
                raise MXNetError(f"DataLoader: worker (pid {pid}) gave no batch for task {task_id} "
                                 f"within {timeout} s (the DataLoader's timeout)")
            conns = {self._result_ends[w]: w for w in busy}
            sentinels = {self._procs[w].sentinel: w for w in busy}
            for ready in _wait(list(conns) + list(sentinels), left):
                if ready in conns:
                    self._receive(conns[ready])
                elif not self._result_ends[sentinels[ready]].poll():
                    raise self._dead(sentinels[ready], task_id)
        ok, value = self._results.pop(task_id)
        if ok:
            return value
        exc, text = value
        if exc is None:
            raise MXNetError(f"DataLoader worker failed:\n{text}")
        raise exc from MXNetError(f"in a DataLoader worker:\n{text}")

    def _receive(self, w: int) -> None:
        try:
            task_id, ok, value = ForkingPickler.loads(self._result_ends[w].recv_bytes())
        except (EOFError, OSError) as exc:
            raise self._dead(w, None) from exc
        del self._queued[w][task_id]
        if task_id in self._dropped:
            self._dropped.discard(task_id)
        else:
            self._results[task_id] = (ok, value)

    def _dead(self, w: int, task_id) -> MXNetError:
        proc = self._procs[w]
        proc.join(1.0)
        return MXNetError(f"DataLoader: worker (pid {proc.pid}) exited with code {proc.exitcode} "
                          f"while task {task_id} was waiting for it")

    def drop(self, task_ids) -> None:
        """Forget tasks whose results nobody will ask for (an iterator abandoned mid-epoch)."""
        ids = set(task_ids)
        self._backlog = collections.deque(t for t in self._backlog if t[0] not in ids)
        for task_id in ids:
            if self._results.pop(task_id, None) is None and any(task_id in q for q in self._queued):
                self._dropped.add(task_id)

    def close(self) -> None:
        """Release the workers, batches in flight or not: close the pipes (never blocks), terminate
        the workers, and wait for each at most ``MXREF_DATALOADER_RELEASE_TIMEOUT`` seconds in
        all before killing it."""
        if self.closed:
            return
        self.closed = True
        for end in self._task_ends + self._result_ends:
            end.close()
        for proc in self._procs:
            if proc.exitcode is None:
                proc.terminate()
        deadline = time.monotonic() + _release_timeout()
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.exitcode is None:
                proc.kill()
                proc.join(1.0)
        self._results.clear()
        self._backlog.clear()
