"""The mpi engine: the algorithms over mpi4py point-to-point messages (raw buffers, no pickle)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from .base import Link, register
from .link_engine import LinkEngine

_TAG = 0x5AB   # one tag for all collective traffic; MPI keeps messages between a pair in order


class MPILink(Link):
    """``Send``/``Recv``/``Sendrecv`` of byte views; a size mismatch surfaces as MPI's truncation error."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.rank, self.world_size = comm.Get_rank(), comm.Get_size()
        from mpi4py import MPI
        self._byte = MPI.BYTE

    def _msg(self, buf: np.ndarray):
        return [buf.view(np.uint8), self._byte]

    def send(self, peer: int, buf: np.ndarray) -> None:
        self.comm.Send(self._msg(buf), dest=peer, tag=_TAG)

    def recv(self, peer: int, buf: np.ndarray) -> None:
        self.comm.Recv(self._msg(buf), source=peer, tag=_TAG)

    def sendrecv(self, send_peer: int, send_buf: np.ndarray, recv_peer: int, recv_buf: np.ndarray) -> None:
        self.comm.Sendrecv(self._msg(send_buf), dest=send_peer, sendtag=_TAG,
                           recvbuf=self._msg(recv_buf), source=recv_peer, recvtag=_TAG)


@register("mpi")
class MPIEngine(LinkEngine):
    """Rabit's API on an MPI communicator (``COMM_WORLD`` by default, duplicated so our messages
    never match anyone else's). Fast, but a dead process ends the job: use ``robust`` for that.
    """

    def __init__(self, comm: Any = None, **kwargs: Any) -> None:
        try:
            from mpi4py import MPI
        except ImportError as exc:
            raise MXNetError("collective engine 'mpi' needs mpi4py (pip install mxref[mpi])") from exc
        self.comm = (comm or MPI.COMM_WORLD).Dup()
        super().__init__(MPILink(self.comm), **kwargs)

    def shutdown(self) -> None:
        self.comm.Free()
