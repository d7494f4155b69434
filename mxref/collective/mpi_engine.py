"""The mpi engine, and ``MPILink``: mpi4py point-to-point messages of raw buffers (no pickle)."""
from __future__ import annotations

import functools
import os
from typing import Any, Optional, Tuple

import numpy as np

from ..base import MXNetError
from .base import Link, LinkRequest, register
from .link_engine import LinkEngine


class _MPIRequest(LinkRequest):
    __slots__ = ("req", "buf")

    def __init__(self, req: Any, buf: np.ndarray) -> None:
        self.req, self.buf = req, buf       # the buffer is kept alive while MPI uses it

    def test(self) -> bool:
        return bool(self.req.Test())


class MPILink(Link):
    """``Send``/``Recv``/``Sendrecv`` (and ``Isend``/``Irecv``/``Iprobe``) of byte views on one
    communicator; a size mismatch surfaces as MPI's truncation error.

    The caller owns the communicator: give each user its own ``Dup`` so tags never collide.
    Tags are MPI tags; ``tag_base`` is added to every one (the collective uses ``0x5AB``).
    """
    kind = "MPI"
    # A receive may get fewer bytes than its buffer holds (never more: MPI's truncation error);
    # the agreement check (agreement.py) relies on it to let data ride with its header.
    short_receives = True
    MAX_PERSISTENT = 4096

    def __init__(self, comm: Any, tag_base: int = 0, yield_wait: bool = False) -> None:
        self.comm = comm
        self.rank, self.world_size = comm.Get_rank(), comm.Get_size()
        self.tag_base = tag_base
        from mpi4py import MPI
        self._MPI = MPI
        self._byte = MPI.BYTE
        self._status = MPI.Status()
        self._persistent: list = []        # bind_sendrecv's requests, freed by close()
        # yield_wait: wait for a message by testing it and giving the core away between tests
        # (sched_yield), instead of MPI's blocking calls, which spin on the core until the peer
        # answers; for more ranks than cores (``yield_wait_for``).
        self.yield_wait = yield_wait
        if yield_wait:
            self.send, self.recv = self._send_yielding, self._recv_yielding
            self.sendrecv, self.sendrecv_prepared = self._sendrecv_yielding, self._sendrecv_prepared_yielding

    def require_serialized(self, who: str) -> None:
        """Refuse to run when MPI allows calls from one thread only (``who`` uses another thread)."""
        MPI = self._MPI
        if MPI.Query_thread() < MPI.THREAD_SERIALIZED:
            raise MXNetError(f"{who} needs MPI initialised with at least MPI_THREAD_SERIALIZED (got "
                             f"level {MPI.Query_thread()}); do not set mpi4py.rc.thread_level below "
                             "'serialized'")

    def _msg(self, buf: np.ndarray):
        # NOTE: the array itself, not a uint8 view of it: mpi4py takes any contiguous buffer's
        # bytes with MPI.BYTE, refuses a strided one (BufferError), and making the view cost
        # 1.6 us per Sendrecv of 4 KiB here, a quarter of MPI's own latency.
        return [buf, self._byte]

    def send(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        self.comm.Send(self._msg(buf), dest=peer, tag=self.tag_base + tag)

    def recv(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        self.comm.Recv(self._msg(buf), source=peer, tag=self.tag_base + tag)

    def sendrecv(self, send_peer: int, send_buf: np.ndarray, recv_peer: int, recv_buf: np.ndarray,
                 tag: int = 0) -> None:
        tag += self.tag_base
        self.comm.Sendrecv(self._msg(send_buf), dest=send_peer, sendtag=tag,
                           recvbuf=self._msg(recv_buf), source=recv_peer, recvtag=tag)

    def _wait(self, reqs: list) -> None:
        testall, pause = self._MPI.Request.Testall, os.sched_yield
        while not testall(reqs):
            pause()

    def _send_yielding(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        self._wait([self.comm.Isend(self._msg(buf), dest=peer, tag=self.tag_base + tag)])

    def _recv_yielding(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        self._wait([self.comm.Irecv(self._msg(buf), source=peer, tag=self.tag_base + tag)])

    def _sendrecv_yielding(self, send_peer: int, send_buf: np.ndarray, recv_peer: int, recv_buf: np.ndarray,
                           tag: int = 0) -> None:
        self._sendrecv_prepared_yielding(send_peer, self._msg(send_buf), recv_peer, self._msg(recv_buf),
                                         self.tag_base + tag)

    def _sendrecv_prepared_yielding(self, send_peer: int, send_msg: Any, recv_peer: int, recv_msg: Any,
                                    tag: Optional[int] = None) -> None:
        tag = self.tag_base if tag is None else tag
        self._wait([self.comm.Irecv(recv_msg, recv_peer, tag), self.comm.Isend(send_msg, send_peer, tag)])

    def prepare(self, buf: np.ndarray) -> Any:
        return self._msg(buf)

    def sendrecv_prepared(self, send_peer: int, send_msg: Any, recv_peer: int, recv_msg: Any) -> None:
        self.comm.Sendrecv(send_msg, send_peer, self.tag_base, recv_msg, recv_peer, self.tag_base)

    def bind_sendrecv(self, send_peer: int, send_msg: Any, recv_peer: int, recv_msg: Any) -> Any:
        # Persistent requests made once: each call only starts and completes them, where
        # ``Sendrecv`` takes both buffer specs apart every time (0.1-0.9 us of a 4 KiB exchange,
        # benchmarks/profile_allreduce_call.py). Past MAX_PERSISTENT requests (many distinct
        # sizes), the plain exchange bound by ``Link``.
        MPI = self._MPI
        if len(self._persistent) >= self.MAX_PERSISTENT:
            return super().bind_sendrecv(send_peer, send_msg, recv_peer, recv_msg)
        reqs = [self.comm.Recv_init(recv_msg, recv_peer, self.tag_base),
                self.comm.Send_init(send_msg, send_peer, self.tag_base)]
        self._persistent.extend(reqs)
        finish = functools.partial(self._wait if self.yield_wait else MPI.Request.Waitall, reqs)
        return functools.partial(MPI.Prequest.Startall, reqs), finish

    def close(self) -> None:
        for req in self._persistent:
            req.Free()
        self._persistent.clear()

    def isend(self, peer: int, buf: np.ndarray, tag: int = 0) -> LinkRequest:
        return _MPIRequest(self.comm.Isend(self._msg(buf), dest=peer, tag=self.tag_base + tag), buf)

    def irecv(self, peer: int, buf: np.ndarray, tag: int = 0) -> LinkRequest:
        return _MPIRequest(self.comm.Irecv(self._msg(buf), source=peer, tag=self.tag_base + tag), buf)

    def probe(self, tag: int) -> Optional[Tuple[int, int]]:
        st = self._status
        if not self.comm.Iprobe(self._MPI.ANY_SOURCE, self.tag_base + tag, st):
            return None
        return st.Get_source(), st.Get_count(self._byte)


def yield_wait_for(comm: Any) -> bool:
    """Whether the ranks of ``comm`` wait by yielding the core (``MXREF_COLLECTIVE_YIELD``: ``1``,
    ``0``, or ``auto``, the default: when this host runs more of its ranks than this process may
    use cores). Collective over ``comm``: every rank decides from its host's count."""
    from mpi4py import MPI
    mode = os.environ.get("MXREF_COLLECTIVE_YIELD", "auto").strip().lower()
    if mode in ("1", "true", "yes", "on"):
        return True
    if mode in ("0", "false", "no", "off"):
        return False
    if mode != "auto":
        raise MXNetError(f"MXREF_COLLECTIVE_YIELD={mode!r}: use 1, 0 or auto")
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    ranks_here = local.Get_size()
    local.Free()
    return ranks_here > len(os.sched_getaffinity(0))


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
        # One tag for all collective traffic; MPI keeps messages between a pair in order.
        link = MPILink(self.comm, tag_base=0x5AB, yield_wait=yield_wait_for(self.comm))
        super().__init__(link, **kwargs)

    def shutdown(self) -> None:
        self.link.close()
        self.comm.Free()
