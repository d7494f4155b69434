"""The robust engine's transport: a full mesh of TCP sockets, rebuilt through the tracker after a failure.

Sockets are non-blocking and every transfer is a ``select`` loop, so ``sendrecv`` can push and
pull at once (a ring where every rank sends first cannot deadlock on full socket buffers), and a
dead peer shows up as an error on its socket (a killed process's sockets are closed by the kernel).
"""
from __future__ import annotations

import json
import os
import select
import socket
import struct
import time
from typing import Any, Dict, List, Tuple

import numpy as np

from ..base import MXNetError
from .base import Link, LinkError

_HELLO = struct.Struct("<qq")   # (epoch, rank) sent first on every new connection
_MESH_TIMEOUT = 10.0            # building the mesh is quick unless a peer died meanwhile


class SocketLink(Link):
    """Point-to-point messages between robust workers over TCP; ``reconnect`` rejoins via the tracker."""

    def __init__(self, tracker: Tuple[str, int], rank: int, world_size: int, host: str = "127.0.0.1",
                 timeout: float = 600.0) -> None:
        self.tracker, self.rank, self.world_size, self.timeout = tracker, rank, world_size, timeout
        self.listener = socket.create_server((host, 0), backlog=max(16, 2 * world_size))
        self.addr = [host, self.listener.getsockname()[1]]
        self.socks: Dict[int, socket.socket] = {}
        self.epoch = 0

    @classmethod
    def from_env(cls) -> "SocketLink":
        """Build from the variables the launcher sets (``MXREF_TRACKER_URI`` and friends)."""
        try:
            tracker = (os.environ["MXREF_TRACKER_URI"], int(os.environ["MXREF_TRACKER_PORT"]))
            rank, world = int(os.environ["MXREF_RANK"]), int(os.environ["MXREF_WORLD_SIZE"])
        except KeyError as exc:
            raise MXNetError(f"collective engine 'robust' needs {exc.args[0]} in the environment; start the "
                             "job with python -m mxref.tools.launch --engine robust") from None
        return cls(tracker, rank, world, timeout=float(os.environ.get("MXREF_ROBUST_TIMEOUT", 600)))

    # -- rendezvous -----------------------------------------------------------------------------
    def _ask_tracker(self, msg: dict, wait: bool) -> Any:
        with socket.create_connection(self.tracker, timeout=30) as conn:
            conn.sendall((json.dumps(msg) + "\n").encode())
            if not wait:
                return None
            conn.settimeout(self.timeout)
            line = conn.makefile("r").readline()
        if not line:
            raise MXNetError(f"robust engine: rank {self.rank} lost the tracker at {self.tracker}")
        return json.loads(line)

    def reconnect(self, finishing: bool = False) -> Any:
        """Drop every connection (telling the peers), wait for all ranks at the tracker, reconnect."""
        while True:
            self._drop()
            try:
                return self._rendezvous(finishing)
            except OSError:     # a peer died while the mesh was being built: rejoin
                time.sleep(0.01 * (1 + self.rank))

    def _rendezvous(self, finishing: bool) -> Any:
        reply = self._ask_tracker({"cmd": "join", "rank": self.rank, "addr": self.addr,
                                   "finishing": finishing}, wait=True)
        if reply.get("finished"):
            return "finished"
        self.epoch = int(reply["epoch"])
        peers = {int(r): tuple(a) for r, a in reply["peers"].items()}
        # Lower ranks accept, higher ranks connect: connect() completes through the listen
        # backlog, so nobody waits on anybody while the mesh is built.
        for peer in range(self.rank):
            s = socket.create_connection(peers[peer], timeout=_MESH_TIMEOUT)
            s.sendall(_HELLO.pack(self.epoch, self.rank))
            self._add(peer, s)
        self.listener.settimeout(_MESH_TIMEOUT)
        while len(self.socks) < self.world_size - 1:
            s, _ = self.listener.accept()
            s.settimeout(_MESH_TIMEOUT)
            try:
                epoch, peer = _HELLO.unpack(self._read_exact(s, _HELLO.size))
            except OSError:
                s.close()
                continue
            if epoch != self.epoch:   # a connection from an attempt before the last failure
                s.close()
                continue
            self._add(peer, s)
        return self.epoch

    @staticmethod
    def _read_exact(s: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = s.recv(n - len(data))
            if not chunk:
                raise OSError("closed during handshake")
            data += chunk
        return data

    def _add(self, peer: int, s: socket.socket) -> None:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        self.socks[peer] = s

    def _drop(self) -> None:
        for s in self.socks.values():
            s.close()
        self.socks.clear()

    def close(self) -> None:
        self._drop()
        self.listener.close()
        try:
            self._ask_tracker({"cmd": "done", "rank": self.rank}, wait=False)
        except OSError:
            pass

    def tracker_print(self, msg: str) -> None:
        self._ask_tracker({"cmd": "print", "msg": msg}, wait=False)

    # -- data ----------------------------------------------------------------------------------
    def _pump(self, sends: List[Tuple[int, np.ndarray]], recvs: List[Tuple[int, np.ndarray]]) -> None:
        out = [(self._sock(p), memoryview(b.view(np.uint8)), p) for p, b in sends]
        inn = [(self._sock(p), memoryview(b.view(np.uint8)), p) for p, b in recvs]
        sent, got = [0] * len(out), [0] * len(inn)
        deadline = time.monotonic() + self.timeout
        while any(n < len(v) for n, (_, v, _) in zip(sent, out)) or \
                any(n < len(v) for n, (_, v, _) in zip(got, inn)):
            rl = [s for n, (s, v, _) in zip(got, inn) if n < len(v)]
            wl = [s for n, (s, v, _) in zip(sent, out) if n < len(v)]
            try:
                readable, writable, _ = select.select(rl, wl, [], 1.0)
                for i, (s, v, _) in enumerate(out):
                    if s in writable and sent[i] < len(v):
                        sent[i] += s.send(v[sent[i]:sent[i] + (1 << 20)])
                for i, (s, v, p) in enumerate(inn):
                    if s in readable and got[i] < len(v):
                        n = s.recv_into(v[got[i]:])
                        if n == 0:
                            raise LinkError(f"robust engine: rank {p} closed its connection "
                                            f"to rank {self.rank}")
                        got[i] += n
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as exc:
                raise LinkError(f"robust engine: rank {self.rank} lost a peer: {exc}") from exc
            if time.monotonic() > deadline:
                raise MXNetError(f"robust engine: rank {self.rank} timed out after {self.timeout}s "
                                 f"waiting for ranks {[p for _, _, p in inn + out]}")

    def _sock(self, peer: int) -> socket.socket:
        s = self.socks.get(peer)
        if s is None:
            raise LinkError(f"robust engine: rank {self.rank} has no connection to rank {peer}")
        return s

    def send(self, peer: int, buf: np.ndarray) -> None:
        self._pump([(peer, buf)], [])

    def recv(self, peer: int, buf: np.ndarray) -> None:
        self._pump([], [(peer, buf)])

    def sendrecv(self, send_peer: int, send_buf: np.ndarray, recv_peer: int, recv_buf: np.ndarray) -> None:
        self._pump([(send_peer, send_buf)], [(recv_peer, recv_buf)])
