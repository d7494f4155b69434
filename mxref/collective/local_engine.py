"""The local engine: ranks are threads of one process and messages go through queues (for unit tests)."""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ..base import MXNetError
from .base import Link, LinkError, register
from .link_engine import LinkEngine


class PeerFailed(MXNetError):
    """Another rank of a local world raised; this one stops instead of waiting forever."""


class LocalWorld:
    """The shared state of one thread world: a FIFO per (sender, receiver) pair and a failure flag.

    For the robust engine it also plays the tracker: ``join`` waits until every rank has joined,
    then opens a new epoch with fresh queues, so nothing sent before a failure can be received after.
    """

    def __init__(self, world_size: int, timeout: float = 60.0) -> None:
        if world_size < 1:
            raise MXNetError(f"run_local: world_size must be >= 1, got {world_size}")
        self.world_size = world_size
        self.timeout = timeout
        self.queues = self._fresh_queues()
        self.failed: Optional[int] = None
        self.epoch, self.broken = 0, False
        self._joined: set = set()
        self._finished = False
        self._cond = threading.Condition()

    def _fresh_queues(self) -> Dict[Tuple[int, int], queue.Queue]:
        w = self.world_size
        return {(s, d): queue.Queue() for s in range(w) for d in range(w)}

    def fail(self, rank: int) -> None:
        with self._cond:
            if self.failed is None:
                self.failed = rank
            self._cond.notify_all()

    def join(self, rank: int, finishing: bool = False) -> Any:
        """Block until all ranks have joined (or, when finishing, until the others gave up)."""
        with self._cond:
            self.broken = True          # whoever is still talking in the old epoch must stop
            self._joined.add(rank)
            epoch = self.epoch
            if len(self._joined) == self.world_size:
                self.epoch, self.broken, self._joined = epoch + 1, False, set()
                self.queues = self._fresh_queues()
                self._cond.notify_all()
            if not self._cond.wait_for(lambda: self.epoch != epoch or (finishing and self._finished)
                                       or self.failed is not None, self.timeout):
                raise MXNetError(f"local engine: rank {rank} waited {self.timeout}s for the others to rejoin")
            if self.epoch == epoch:
                self._joined.discard(rank)
                if self.failed is not None:
                    raise PeerFailed(f"local engine: rank {self.failed} failed; rank {rank} stops")
                return "finished"
            return self.epoch

    def finish(self) -> None:
        """A rank left after every rank agreed to shut down: release those still rejoining."""
        with self._cond:
            self._finished = True
            self._cond.notify_all()


class LocalLink(Link):
    """Sends copy the buffer into the receiver's queue, so a send never blocks (no ring deadlock)."""

    def __init__(self, world: LocalWorld, rank: int) -> None:
        if not 0 <= rank < world.world_size:
            raise MXNetError(f"local engine: rank {rank} outside world of size {world.world_size}")
        self.world, self.rank, self.world_size = world, rank, world.world_size

    def send(self, peer: int, buf: np.ndarray) -> None:
        self._check()
        self.world.queues[(self.rank, peer)].put(buf.copy())

    def _check(self) -> None:
        if self.world.failed is not None:
            raise PeerFailed(f"local engine: rank {self.world.failed} failed; rank {self.rank} stops")

    def recv(self, peer: int, buf: np.ndarray) -> None:
        q = self.world.queues[(peer, self.rank)]
        deadline = time.monotonic() + self.world.timeout
        while True:
            self._check()      # polled, so a failure elsewhere is noticed within 10 ms
            try:
                got = q.get(timeout=0.01)
                break
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise MXNetError(f"local engine: rank {self.rank} waited {self.world.timeout}s "
                                     f"for a message from rank {peer}") from None
        if got.nbytes != buf.nbytes or got.dtype != buf.dtype:
            raise MXNetError(f"local engine: rank {self.rank} expected {buf.size} x {buf.dtype} from rank "
                             f"{peer}, got {got.size} x {got.dtype}")
        buf[...] = got

    def sendrecv(self, send_peer: int, send_buf: np.ndarray, recv_peer: int, recv_buf: np.ndarray) -> None:
        self.send(send_peer, send_buf)
        self.recv(recv_peer, recv_buf)


class LocalRobustLink(LocalLink):
    """The thread link for the robust engine: any failure breaks the epoch; ``reconnect`` rejoins."""

    def __init__(self, world: LocalWorld, rank: int) -> None:
        super().__init__(world, rank)
        self.epoch = -1

    def _check(self) -> None:
        super()._check()
        if self.world.broken or self.epoch != self.world.epoch:
            raise LinkError(f"local engine: epoch {self.epoch} broken; rank {self.rank} reconnects")

    def reconnect(self, finishing: bool = False) -> Any:
        got = self.world.join(self.rank, finishing)
        if got != "finished":
            self.epoch = got
        return got

    def close(self) -> None:
        self.world.finish()


@register("local")
class LocalEngine(LinkEngine):
    """One rank of a thread world; ``collective.init`` binds it to the calling thread only."""
    thread_local = True

    def __init__(self, world: Optional[LocalWorld] = None, rank: int = 0, **kwargs: Any) -> None:
        super().__init__(LocalLink(world or LocalWorld(1), rank), **kwargs)


def run_local(world_size: int, fn: Callable[..., Any], *args: Any, engine: str = "local",
              timeout: float = 60.0, max_restarts: int = 0, **engine_kw: Any) -> List[Any]:
    """Run ``fn(*args)`` on ``world_size`` threads, each initialised as one rank; return the results.

    Inside ``fn`` the module-level API (``collective.allreduce`` ...) refers to the thread's rank.
    If a rank raises, the others stop at their next receive and the first error is re-raised here.
    With ``engine='robust'`` or ``'mock'``, a rank killed by the mock engine (``MockKill``) is
    restarted on its thread from the start of ``fn``, up to ``max_restarts`` times, as the
    launcher restarts a process.

    Examples
    --------
    >>> from mxref import collective
    >>> def work():
    ...     a = np.array([collective.get_rank() + 1.0])
    ...     collective.allreduce(a, collective.SUM)
    ...     return a[0]
    >>> run_local(3, work)
    [6.0, 6.0, 6.0]
    """
    from . import finalize, init  # the API module; imported here to keep base modules acyclic
    world = LocalWorld(world_size, timeout)
    results: List[Any] = [None] * world_size
    errors: Dict[int, BaseException] = {}

    def body(rank: int) -> None:
        from .mock_engine import MockKill
        for attempt in range(max_restarts + 1):
            kw = dict(engine_kw, attempt=attempt) if engine in ("robust", "mock") else engine_kw
            try:
                init(engine, world=world, rank=rank, **kw)
                results[rank] = fn(*args)
                finalize()
                errors.pop(rank, None)
                return
            except MockKill as exc:
                errors[rank] = exc     # a killed rank leaves without finalize; retried if allowed
                with world._cond:
                    world.broken = True
            except BaseException as exc:   # noqa: B036 - reported to the caller below
                errors[rank] = exc
                world.fail(rank)
                return
        world.fail(rank)

    threads = [threading.Thread(target=body, args=(r,), name=f"collective-rank{r}", daemon=True)
               for r in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    if any(t.is_alive() for t in threads):
        raise MXNetError(f"run_local: ranks still running after {timeout}s")
    if errors:
        # The root cause is the error that is not a consequence of another rank failing.
        first = sorted(errors, key=lambda r: (isinstance(errors[r], PeerFailed), r))[0]
        raise errors[first]
    return results
