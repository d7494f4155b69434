"""What a worker sets up once for all its dist stores: its role, its ``Link`` and the communication thread.

Under ``mpiexec`` there is one ``MPIRuntime`` per process (a server rank serves from inside it and
exits); in an in-process job (``inprocess.py``) each worker thread has its own ``Runtime``, bound
to the thread with ``bind_runtime``. ``runtime()`` returns the calling worker's.
"""
from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
from typing import TYPE_CHECKING, List, Optional

from ... import engine as _engine
from ...base import MXNetError
from .comm import Cmd, Comm
from .failure import watch_for_failures
from .roles import Roles, assign_roles
from .server import run_server

if TYPE_CHECKING:
    from .worker import DistKVStore

__all__ = ["Runtime", "MPIRuntime", "runtime", "bind_runtime"]


class Runtime:
    """What a worker sets up once for every dist store: its role, its ``Link``, the comm thread.

    Under mpiexec there is one per process (``MPIRuntime``); in an in-process job
    (``inprocess.run_job``) one per worker thread, bound to that thread.
    """

    def __init__(self, roles: Roles, link):
        self.roles = roles
        self.link = link
        self.comm: Optional[Comm] = None
        self.next_store_id = 0
        self.closed = False

    def start_worker(self) -> Comm:
        if self.comm is None:
            self.comm = Comm(self.link, self.roles).start()
        return self.comm

    def adopt(self, store: "DistKVStore") -> None:
        """A store of this worker was made (a runtime that drains per store keeps it)."""

    def servers(self) -> List[int]:
        return [self.roles.server_mpi_rank(s) for s in range(self.roles.num_servers)]

    def serve(self) -> None:
        """On a server rank: serve until every worker is done (and, under mpiexec, exit)."""
        raise MXNetError(f"kvstore: {self.roles.name(self.roles.mpi_rank)} is a server; it serves "
                         "from its own thread and creates no store")

    def drain(self) -> None:
        """Wait for this worker's queued store operations (errors were raised or are moot)."""
        try:
            _engine.get().wait_for_all()
        except MXNetError:
            pass    # already raised to the user, or nobody waited for it; the servers need DONE

    def finish(self) -> None:
        """Drain, tell every server this worker is done, stop the thread."""
        if self.closed or self.comm is None:
            return
        self.closed = True
        self.drain()
        try:
            self.comm.call(self.servers(), Cmd.DONE)
        except MXNetError as exc:
            sys.stderr.write(f"kvstore: could not tell the servers that "
                             f"{self.roles.name(self.roles.mpi_rank)} is done: {exc}\n")
        self.comm.stop()


class MPIRuntime(Runtime):
    """The process's runtime under mpiexec: an ``MPILink`` on a duplicate of ``COMM_WORLD``."""

    def __init__(self):
        try:
            from mpi4py import MPI  # noqa: PLC0415 - mpi4py is optional for mxref as a whole
        except ImportError as exc:
            raise MXNetError("dist kvstore types need mpi4py (pip install mpi4py) and a launch "
                             "under mpiexec") from exc
        from ...collective.mpi_engine import MPILink  # noqa: PLC0415
        self.MPI = MPI
        world = MPI.COMM_WORLD
        roles = assign_roles(world.Get_rank(), world.Get_size())
        # Our own communicator, so our tags never meet the collective module's or the user's.
        self.mpi_comm = world.Dup()
        super().__init__(roles, MPILink(self.mpi_comm))
        # Under -disable-auto-cleanup hydra lets the survivors of a dead rank live: name it.
        peers = self.mpi_comm.allgather((socket.gethostname(), os.getpid()))
        watch_for_failures(roles, peers)

    def start_worker(self) -> Comm:
        if self.comm is None:
            super().start_worker()
            atexit.register(self.finish)
        return self.comm

    def serve(self) -> None:
        failure = run_server(self.link, self.roles)
        if failure is not None:
            sys.stderr.write(f"{failure}\n")
            self.MPI.COMM_WORLD.Abort(1)
        if not self.MPI.Is_finalized():
            self.MPI.Finalize()
        sys.exit(0)

    def finish(self) -> None:
        if self.closed or self.comm is None:
            return
        if getattr(sys, "last_value", None) is not None:
            # NOTE: an uncaught exception: the others must not go on waiting for this worker's
            # pushes, and MPI_Finalize could block, so end the whole job now (mpi4py's own
            # ``python -m mpi4py`` does the same).
            sys.stderr.write(f"kvstore: {self.roles.name(self.roles.mpi_rank)} failed with an "
                             "uncaught exception; aborting the MPI job\n")
            sys.stderr.flush()
            self.MPI.COMM_WORLD.Abort(1)
        super().finish()


_runtime: Optional[Runtime] = None
_runtime_lock = threading.Lock()
_bound = threading.local()       # an in-process job's worker thread: its own runtime


def runtime() -> Runtime:
    """The calling worker's runtime: the thread's (in-process jobs), else the process's, made on
    first use (every MPI rank must make it: ``Dup`` is collective)."""
    mine = getattr(_bound, "runtime", None)
    if mine is not None:
        return mine
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = MPIRuntime()
        return _runtime


def bind_runtime(rt: Optional[Runtime]) -> None:
    """Make ``rt`` the calling thread's runtime (None: back to the process's)."""
    _bound.runtime = rt
