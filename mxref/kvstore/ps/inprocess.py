"""A parameter-server job inside one process: servers and workers are threads over the in-process link.

``run_job(fn, num_workers, num_servers)`` runs the very protocol of an ``mpiexec`` job (the same
``Comm``, ``Server`` and worker stores, only the ``Link`` differs), so protocol tests need no
``mpiexec``. Each worker thread runs ``fn()``; inside it ``mx.kv.create('dist_sync')`` (or any
dist type) returns a store of that worker, ``kv.rank`` being the thread's worker rank.

Examples
--------
>>> def work():
...     kv = mx.kv.create('dist_sync')
...     kv.init(0, mx.nd.zeros((2,)))
...     kv.push(0, mx.nd.ones((2,)) * (kv.rank + 1))
...     out = mx.nd.empty((2,)); kv.pull(0, out=out)
...     return out.asnumpy()
>>> run_job(work, num_workers=3)       # 1 + 2 + 3 on every worker
[array([6., 6.], dtype=float32), array([6., 6.], dtype=float32), array([6., 6.], dtype=float32)]
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List

from ...base import MXNetError
from ...collective.local_engine import LocalLink, LocalWorld, PeerFailed
from .roles import assign_roles
from .runtime import Runtime, bind_runtime
from .server import Server

__all__ = ["run_job", "ThreadRuntime"]


class ThreadRuntime(Runtime):
    """A worker thread's runtime: a ``LocalLink``; at the end it waits only for its own stores.

    NOTE: ``wait_for_all`` would also wait for the other workers' operations, and one of those
    may be a sync push waiting for this very worker's ``DONE``: a deadlock until the timeout.
    """

    def __init__(self, roles, link):
        super().__init__(roles, link)
        self.stores: list = []

    def adopt(self, store) -> None:
        self.stores.append(store)

    def drain(self) -> None:
        for store in self.stores:
            for buf in list(store._store.values()) + list(store._rsp.values()):
                try:
                    buf.wait_to_read()
                except MXNetError:
                    pass


def run_job(fn: Callable[..., Any], num_workers: int, num_servers: int = 1, *args: Any,
            timeout: float = 120.0) -> List[Any]:
    """Run ``fn(*args)`` on ``num_workers`` worker threads against ``num_servers`` server threads.

    Returns the workers' results by rank. The first worker error is re-raised here (a worker
    that raised still tells the servers it is done, so the others finish as with unequal batch
    counts). A job still running after ``timeout`` seconds is stopped: every link raises, every
    request in flight fails, and ``MXNetError`` names the threads that were stuck.
    """
    world_size = num_servers + num_workers
    assign_roles(0, world_size, num_servers)          # the same refusals as under mpiexec
    world = LocalWorld(world_size, timeout)
    results: List[Any] = [None] * num_workers
    errors: Dict[int, BaseException] = {}
    servers = [Server(LocalLink(world, s), assign_roles(s, world_size, num_servers), own_process=False)
               for s in range(num_servers)]

    def serve(server: Server) -> None:
        try:
            server.run()
            if server.comm.broken is not None:
                errors.setdefault(-1 - server.roles.rank, server.comm.broken)
        except BaseException as exc:  # noqa: B036 - reported to the caller below
            errors[-1 - server.roles.rank] = exc

    def work(rank: int) -> None:
        rt = ThreadRuntime(assign_roles(num_servers + rank, world_size, num_servers),
                           LocalLink(world, num_servers + rank))
        bind_runtime(rt)
        try:
            results[rank] = fn(*args)
        except BaseException as exc:  # noqa: B036 - reported to the caller below
            errors[rank] = exc
        finally:
            try:
                # A worker that failed before making any store has no communication thread yet;
                # start one all the same, so its DONE reaches the servers and the job ends now
                # with this error instead of at the timeout.
                rt.start_worker()
                rt.finish()
            finally:
                bind_runtime(None)

    threads = [threading.Thread(target=serve, args=(s,), daemon=True, name=f"ps server {s.roles.rank}")
               for s in servers]
    threads += [threading.Thread(target=work, args=(r,), daemon=True, name=f"ps worker {r}")
                for r in range(num_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        world.fail(0)                     # every link raises now: nobody waits forever
        for t in threads:
            t.join(10.0)
        raise MXNetError(f"kvstore in-process job: {', '.join(stuck)} still running after {timeout:g}s")
    if errors:
        workers = sorted(r for r in errors if r >= 0 and not isinstance(errors[r], PeerFailed))
        raise errors[workers[0] if workers else sorted(errors)[0]]
    return results
