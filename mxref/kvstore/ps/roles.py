"""Who is a server and who is a worker in an MPI job: ranks ``0..S-1`` serve, the rest work.

``mpiexec -n W+S python train.py`` starts ``W+S`` identical processes; the role of each follows
from its MPI rank and ``MXREF_NUM_SERVERS`` (``S``, default 1; ``mxref.tools.launch -s S`` sets
it). Worker rank ``r`` (what ``kv.rank`` returns, in ``[0, W)``) is MPI rank ``S + r``, so
messages and errors can always name both numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...base import MXNetError, env_int

__all__ = ["Roles", "assign_roles", "DEFAULT_NUM_SERVERS"]

DEFAULT_NUM_SERVERS = 1


@dataclass(frozen=True)
class Roles:
    """The role of one process, and the shape of the whole job.

    Attributes
    ----------
    mpi_rank, world_size : int
        This process's rank in ``MPI.COMM_WORLD`` and the number of processes.
    num_servers, num_workers : int
        ``S`` and ``W = world_size - S``.
    """

    mpi_rank: int
    world_size: int
    num_servers: int

    @property
    def num_workers(self) -> int:
        return self.world_size - self.num_servers

    @property
    def is_server(self) -> bool:
        return self.mpi_rank < self.num_servers

    @property
    def is_worker(self) -> bool:
        return not self.is_server

    @property
    def rank(self) -> int:
        """This worker's rank (``kv.rank``); for a server, its server index."""
        return self.mpi_rank if self.is_server else self.mpi_rank - self.num_servers

    def server_mpi_rank(self, server: int) -> int:
        return server

    def worker_mpi_rank(self, worker: int) -> int:
        return self.num_servers + worker

    def worker_of_mpi_rank(self, mpi_rank: int) -> int:
        return mpi_rank - self.num_servers

    def name(self, mpi_rank: int) -> str:
        """``'worker 1 (MPI rank 2)'`` / ``'server 0 (MPI rank 0)'``: how errors name a process."""
        if mpi_rank < self.num_servers:
            return f"server {mpi_rank} (MPI rank {mpi_rank})"
        return f"worker {mpi_rank - self.num_servers} (MPI rank {mpi_rank})"


def assign_roles(mpi_rank: int, world_size: int, num_servers: int | None = None) -> Roles:
    """The ``Roles`` of ``mpi_rank`` in a job of ``world_size`` processes.

    ``num_servers`` defaults to ``MXREF_NUM_SERVERS`` (itself 1 when unset). A job needs at least
    one server and one worker; anything else is refused with the numbers that do not fit.
    """
    if num_servers is None:
        num_servers = env_int("MXREF_NUM_SERVERS", DEFAULT_NUM_SERVERS)
    if num_servers < 1:
        raise MXNetError(f"kvstore dist: MXREF_NUM_SERVERS must be at least 1, got {num_servers}")
    if world_size <= num_servers:
        raise MXNetError(
            f"kvstore dist: {world_size} MPI process(es) cannot hold {num_servers} server(s) and at "
            f"least one worker; start W+S processes (mpiexec -n W+S, with MXREF_NUM_SERVERS=S) or "
            f"use python -m mxref.tools.launch -n W -s S")
    if not 0 <= mpi_rank < world_size:
        raise MXNetError(f"kvstore dist: MPI rank {mpi_rank} outside [0, {world_size})")
    return Roles(mpi_rank, world_size, num_servers)
