"""The robust engine's transport: a full mesh of TCP sockets, rebuilt through the tracker after a failure.

Sockets are non-blocking and every transfer is a ``select`` loop, so ``sendrecv`` can push and
pull at once (a ring where every rank sends first cannot deadlock on full socket buffers), and a
dead peer shows up as an error on its socket (a killed process's sockets are closed by the kernel).

Every connection (to the tracker and between workers) first passes the job-secret handshake of
``auth.py``; every frame is ``(tag, nbytes)``, the payload, then an HMAC over (sender, receiver,
sequence number, tag, nbytes, payload) under the connection's session key, so a forged, replayed
or reordered frame is a ``LinkError`` naming the peer. Connect, accept and handshake each have a
deadline (``MXREF_COLLECTIVE_TIMEOUT``); a tracker that cannot be reached is an ``MXNetError``
naming its address, never a retry loop.
"""
from __future__ import annotations

import hmac
import json
import logging
import os
import select
import socket
import struct
import time
from collections import defaultdict, deque
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..base import MXNetError
from . import auth
from .base import Link, LinkError, LinkRequest, as_bytes
from .tracker import FROM_TRACKER, TO_TRACKER, collective_timeout

log = logging.getLogger("mxref.collective")
_HELLO = struct.Struct("<qq")   # (epoch, rank) sent first on every new connection
_FRAME = struct.Struct("<qq")   # (tag, nbytes) before every message


class SocketLink(Link):
    """Point-to-point messages between robust workers over TCP; ``reconnect`` rejoins via the tracker."""
    kind = "TCP"

    def __init__(self, tracker: Tuple[str, int], rank: int, world_size: int, host: str = "127.0.0.1",
                 timeout: float = 600.0, secret: Optional[bytes] = None,
                 connect_timeout: Optional[float] = None) -> None:
        self.tracker, self.rank, self.world_size, self.timeout = tracker, rank, world_size, timeout
        self.secret = secret if secret is not None else auth.secret_from_env()
        self.connect_timeout = collective_timeout() if connect_timeout is None else connect_timeout
        self.refused: List[str] = []      # connections dropped for failing the handshake
        self._keys: Dict[int, bytes] = {}    # peer -> this connection's session key
        self._mac_payload = auth.frame_mac_covers_payload()   # MXREF_FRAME_MAC, read once
        self._seq_out: Dict[int, int] = {}
        self._seq_in: Dict[int, int] = {}
        self.listener = socket.create_server((host, 0), backlog=max(16, 2 * world_size))
        self.addr = [host, self.listener.getsockname()[1]]
        self.socks: Dict[int, socket.socket] = {}
        self.epoch = 0
        self._reset_data()

    @classmethod
    def from_env(cls) -> "SocketLink":
        """Build from the variables the launcher sets (``MXREF_TRACKER_URI`` and friends)."""
        try:
            tracker = (os.environ["MXREF_TRACKER_URI"], int(os.environ["MXREF_TRACKER_PORT"]))
            rank, world = int(os.environ["MXREF_RANK"]), int(os.environ["MXREF_WORLD_SIZE"])
        except KeyError as exc:
            raise MXNetError(f"collective engine 'robust' needs {exc.args[0]} in the environment; start the "
                             "job with python -m mxref.tools.launch --engine robust") from None
        return cls(tracker, rank, world, timeout=float(os.environ.get("MXREF_ROBUST_TIMEOUT", 600)),
                   host=os.environ.get("MXREF_BIND_HOST", "127.0.0.1"))

    # -- rendezvous -----------------------------------------------------------------------------
    def _ask_tracker(self, msg: dict, wait: bool, keep: bool = False) -> Any:
        """Send ``msg``; with ``wait``, return the tracker's reply. With ``keep`` (a join), return
        ``(reply, conn, key)``: the connection stays open for a possible abort of the epoch."""
        where = self._tracker_name()
        conn = None
        try:
            conn = socket.create_connection(self.tracker, timeout=self.connect_timeout)
            key = auth.client_handshake(conn, self.secret, self.connect_timeout)
            auth.send_message(conn, key, *TO_TRACKER, 0, json.dumps(msg).encode())
            if not wait:
                return None
            # The reply comes once every rank has joined (a restarted one may take a while).
            line = auth.recv_message(conn, key, *FROM_TRACKER, 0, time.monotonic() + self.timeout)
        except auth.AuthError as exc:
            raise MXNetError(f"robust engine: rank {self.rank}: the tracker at {where} failed "
                             f"authentication ({exc})") from None
        except OSError as exc:
            raise MXNetError(f"robust engine: rank {self.rank} lost the tracker at {where} "
                             f"({type(exc).__name__}: {exc})") from None
        finally:
            if conn is not None and not (keep and wait):
                conn.close()
        if keep:
            return json.loads(line), conn, key
        return json.loads(line)

    def _tracker_name(self) -> str:
        return "%s:%s" % tuple(self.tracker)

    def _tracker_says(self, tracker: list) -> int:
        """Read one message on the open join connection ``tracker`` (``[conn, key, seqno]``): the
        rank whose rejoin aborts the epoch; ``OSError`` if the tracker is gone."""
        conn, key, seq = tracker
        try:
            line = auth.recv_message(conn, key, *FROM_TRACKER, seq, time.monotonic() + self.connect_timeout)
            msg = json.loads(line)
            tracker[2] = seq + 1
            return int(msg["rank"])
        except (OSError, ValueError, KeyError, TypeError, auth.AuthError) as exc:
            raise ConnectionAbortedError(f"rank {self.rank} lost the tracker at {self._tracker_name()} "
                                         f"while building the mesh ({type(exc).__name__}: {exc})") from None

    def reconnect(self, finishing: bool = False) -> Any:
        """Drop every connection (telling the peers), wait for all ranks at the tracker, reconnect."""
        give_up = time.monotonic() + self.timeout
        while True:
            self._drop()
            try:
                return self._rendezvous(finishing)
            except OSError as exc:     # a peer died while the mesh was being built: rejoin
                if time.monotonic() > give_up:
                    raise MXNetError(f"robust engine: rank {self.rank} could not build the mesh within "
                                     f"{self.timeout}s: {exc}") from None
                time.sleep(0.01 * (1 + self.rank))

    def _rendezvous(self, finishing: bool) -> Any:
        reply, tracker_conn, tracker_key = self._ask_tracker(
            {"cmd": "join", "rank": self.rank, "addr": self.addr, "finishing": finishing},
            wait=True, keep=True)
        try:
            if reply.get("finished"):
                return "finished"
            self.epoch = int(reply["epoch"])
            peers = {int(r): tuple(a) for r, a in reply["peers"].items()}
            # Lower ranks accept, higher ranks connect: connect() completes through the listen
            # backlog, so nobody waits on anybody while the mesh is built.
            t = self.connect_timeout
            for peer in range(self.rank):
                s = socket.create_connection(peers[peer], timeout=t)
                try:
                    key = auth.client_handshake(s, self.secret, t)
                except auth.AuthError as exc:
                    s.close()
                    raise MXNetError(f"robust engine: rank {self.rank}: the listener of rank {peer} at "
                                     f"{peers[peer]} failed authentication ({exc})") from None
                auth.send_message(s, key, -1, peer, 0, _HELLO.pack(self.epoch, self.rank))
                self._add(peer, s, key)
            self._accept_peers(time.monotonic() + t, t, [tracker_conn, tracker_key, 1])
            return self.epoch
        finally:
            tracker_conn.close()       # the mesh is complete (or given up): no abort can matter now

    def _accept_peers(self, deadline: float, t: float, tracker=None) -> None:
        """Accept the higher ranks, all handshakes at once in one ``select`` loop; ``tracker``
        (the open join connection, its key and next seqno) is watched too: the rejoin of a rank
        still awaited here, or the tracker's end, stops the wait at once (``OSError``, so
        ``reconnect`` rejoins).

        NOTE: serving one handshake after another would let a stranger that connects and sends
        nothing hold up the real peers behind it; here it just waits in ``pending`` (and is
        dropped when the mesh is complete or the deadline passes).
        """
        pending: Dict[socket.socket, auth.Challenged] = {}
        hello_bytes = 8 + _HELLO.size + auth.MAC
        watch = [tracker[0]] if tracker is not None else []
        try:
            while len(self.socks) < self.world_size - 1:
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = sorted(set(range(self.rank + 1, self.world_size)) - set(self.socks))
                    raise socket.timeout(f"rank {self.rank}: ranks {missing} did not connect within {t}s")
                readable, _, _ = select.select([self.listener, *pending, *watch], [], [], left)
                for s in readable:
                    if watch and s is watch[0]:
                        rejoined = self._tracker_says(tracker)
                        if rejoined > self.rank and rejoined not in self.socks:
                            raise ConnectionAbortedError(
                                f"rank {self.rank}: the tracker gave up epoch {self.epoch}: rank "
                                f"{rejoined}, awaited here, joined again")
                        continue
                    if s is self.listener:
                        conn, where = self.listener.accept()
                        try:
                            pending[conn] = auth.Challenged(conn, where, self.secret, hello_bytes)
                        except OSError:
                            conn.close()
                        continue
                    ch = pending[s]
                    try:
                        hello = ch.feed()
                        if hello is None:
                            continue
                        epoch, peer = _HELLO.unpack(auth.open_message(hello, ch.key, -1, self.rank, 0))
                    except BlockingIOError:
                        continue
                    except (OSError, auth.AuthError) as exc:
                        self._refuse(pending.pop(s), exc)
                        continue
                    del pending[s]
                    if epoch != self.epoch or not self.rank < peer < self.world_size:
                        s.close()      # a connection from an attempt before the last failure
                        continue
                    self._add(peer, s, ch.key)
        finally:
            for ch in pending.values():
                self._refuse(ch, "still unauthenticated when the mesh was complete" if ch.key is None
                             else "no hello")

    def _refuse(self, ch: "auth.Challenged", why) -> None:
        ch.s.close()
        if ch.key is None:
            where = f"{ch.where[0]}:{ch.where[1]}"
            self.refused.append(f"{where}: {why}")
            log.warning("robust engine: rank %d dropped an unauthenticated connection from %s (%s)",
                        self.rank, where, why)

    def _add(self, peer: int, s: socket.socket, key: bytes) -> None:
        self._keys[peer], self._seq_out[peer], self._seq_in[peer] = key, 1, 1
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        self.socks[peer] = s

    def _drop(self) -> None:
        for s in self.socks.values():
            s.close()
        self.socks.clear()
        self._reset_data()      # fresh connections: nothing half-read or queued survives

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
    # NOTE: every message travels as a (tag, nbytes) frame then its bytes, so several tags can
    # share one connection: a frame nobody has posted a receive for yet is kept in ``_stash``
    # until one is (or until ``probe`` reports it). Frames between a pair stay in send order.
    def _reset_data(self) -> None:
        for posted in getattr(self, "_posted", {}).values():
            for req in posted:
                req.error = LinkError(f"robust engine: rank {self.rank} dropped its connections")
        self._outq: Dict[int, deque] = defaultdict(deque)
        self._reader: Dict[int, _Reader] = {}
        self._posted: Dict[Tuple[int, int], deque] = defaultdict(deque)
        self._stash: Dict[Tuple[int, int], deque] = defaultdict(deque)
        self._eof: set = set()

    def _sock(self, peer: int) -> socket.socket:
        s = self.socks.get(peer)
        if s is None:
            raise LinkError(f"robust engine: rank {self.rank} has no connection to rank {peer}")
        return s

    def isend(self, peer: int, buf: np.ndarray, tag: int = 0) -> LinkRequest:
        self._sock(peer)
        data = memoryview(as_bytes(buf))
        seq = self._seq_out[peer]
        self._seq_out[peer] = seq + 1
        hasher = auth.frame_hasher(self._keys[peer], self.rank, peer, seq, tag, data.nbytes,
                                   self._mac_payload)
        req = _Send(self, peer, memoryview(_FRAME.pack(tag, data.nbytes)), data, hasher)
        self._outq[peer].append(req)
        return req

    def irecv(self, peer: int, buf: np.ndarray, tag: int = 0) -> LinkRequest:
        req = _Recv(self, peer, memoryview(as_bytes(buf)), tag)
        stash = self._stash.get((peer, tag))
        if stash:
            req.take(stash.popleft())
        else:
            if peer in self._eof:
                raise LinkError(f"robust engine: rank {peer} closed its connection to rank {self.rank}")
            self._sock(peer)
            self._posted[(peer, tag)].append(req)
        return req

    def probe(self, tag: int) -> Optional[Tuple[int, int]]:
        self._progress(0.0, list(self.socks))
        for (peer, t), stash in self._stash.items():
            if t == tag and stash:
                return peer, len(stash[0])
        return None

    def send(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        self._wait([self.isend(peer, buf, tag)])

    def recv(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        self._wait([self.irecv(peer, buf, tag)])

    def sendrecv(self, send_peer: int, send_buf: np.ndarray, recv_peer: int, recv_buf: np.ndarray,
                 tag: int = 0) -> None:
        self._wait([self.isend(send_peer, send_buf, tag), self.irecv(recv_peer, recv_buf, tag)])

    def _wait(self, reqs: List["_Request"]) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            left = [r for r in reqs if not r.finished()]
            if not left:
                return
            self._progress(1.0, [r.peer for r in left if isinstance(r, _Recv)])
            if time.monotonic() > deadline:
                raise MXNetError(f"robust engine: rank {self.rank} timed out after {self.timeout}s "
                                 f"waiting for ranks {[r.peer for r in left]}")

    def _progress(self, timeout: float, read_peers: List[int]) -> None:
        """One ``select`` round: write what is queued, read frames from ``read_peers``."""
        rl = {self.socks[p]: p for p in set(read_peers) if p in self.socks and p not in self._eof}
        wl = {self.socks[p]: p for p, q in self._outq.items() if q and p in self.socks}
        if not rl and not wl:
            return
        try:
            readable, writable, _ = select.select(list(rl), list(wl), [], timeout)
            for s in writable:
                q = self._outq[wl[s]]
                while q and q[0].write(s):
                    q.popleft()
            for s in readable:
                self._read(rl[s], s)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            raise LinkError(f"robust engine: rank {self.rank} lost a peer: {exc}") from exc

    def _read(self, peer: int, s: socket.socket) -> None:
        """Read from a readable socket until one frame is complete or no bytes are left for now."""
        # NOTE: a frame is three reads (head, payload, MAC); trying the next read at once, rather
        # than after another ``select``, keeps a small message at one round.
        while True:
            rd = self._reader.get(peer)
            if rd is None:
                rd = self._reader[peer] = _Reader()
            view = rd.view()
            try:
                n = s.recv_into(view)
            except BlockingIOError:
                return
            if n and rd.target is not None and rd.mac is None:
                rd.hasher.update(view[:n])      # hashed as it arrives, not all at the end
            if n == 0:
                self._eof.add(peer)
                if self._posted_for(peer) or rd.got or rd.target is not None:
                    raise LinkError(f"robust engine: rank {peer} closed its connection to rank {self.rank}")
                return
            rd.got += n
            if self._advance(peer, rd):
                return

    def _advance(self, peer: int, rd: "_Reader") -> bool:
        """Move ``rd`` on after a read; True once its frame was checked and delivered."""
        if rd.target is None and rd.got == _FRAME.size:
            tag, size = _FRAME.unpack(rd.head)
            posted = self._posted.get((peer, tag))
            req = posted.popleft() if posted else None
            if req is not None and req.buf.nbytes != size:
                raise MXNetError(f"robust engine: rank {self.rank} expected {req.buf.nbytes} bytes "
                                 f"with tag {tag} from rank {peer}, got {size}")
            rd.start(tag, req, size)
            seq = self._seq_in[peer]
            self._seq_in[peer] = seq + 1
            rd.hasher = auth.frame_hasher(self._keys[peer], peer, self.rank, seq, tag, size,
                                          self._mac_payload)
        if rd.target is not None and rd.mac is None and rd.got == len(rd.target):
            rd.mac, rd.got = bytearray(auth.MAC), 0
            return False
        if rd.mac is None or rd.got < auth.MAC:
            return False
        if not hmac.compare_digest(bytes(rd.mac), rd.hasher.digest()):
            raise LinkError(f"robust engine: rank {self.rank} refused a frame from rank {peer} (tag "
                            f"{rd.tag}, {len(rd.target)} bytes) that failed authentication: forged, "
                            "replayed or reordered (or the ranks disagree on MXREF_FRAME_MAC)")
        data = rd.target.obj if rd.target.nbytes else b""
        posted = self._posted.get((peer, rd.tag))
        if rd.req is not None:
            rd.req.done = True
        elif posted:        # posted while this frame was half read (into a stash buffer)
            posted.popleft().take(data)
        else:
            self._stash[(peer, rd.tag)].append(data)
        self._reader[peer] = _Reader()
        return True

    def _posted_for(self, peer: int) -> bool:
        return any(q for (p, _), q in self._posted.items() if p == peer)


class _Request(LinkRequest):
    def __init__(self, link: SocketLink, peer: int) -> None:
        self.link, self.peer, self.done, self.error = link, peer, False, None

    def finished(self) -> bool:
        if self.error is not None:
            raise self.error
        return self.done

    def test(self) -> bool:
        if not self.finished():
            self.link._progress(0.0, [self.peer] if isinstance(self, _Recv) else [])
        return self.finished()


class _Send(_Request):
    def __init__(self, link: SocketLink, peer: int, head: memoryview, data: memoryview, hasher) -> None:
        super().__init__(link, peer)
        self.parts: List[Optional[memoryview]] = [head, data, None]     # the MAC once data is out
        self.hasher, self.part, self.sent = hasher, 0, 0

    def write(self, s: socket.socket) -> bool:
        """Send what the socket takes now; True once the whole frame is out."""
        # NOTE: the payload is hashed as it goes out, so the first bytes leave at once instead
        # of after a pass over the whole buffer; its MAC follows it.
        while self.part < 3:
            if self.part == 2 and self.parts[2] is None:
                self.parts[2] = memoryview(self.hasher.digest())
            part = self.parts[self.part]
            if self.sent < len(part):
                n = s.send(part[self.sent:self.sent + (1 << 20)])
                if self.part == 1:
                    self.hasher.update(part[self.sent:self.sent + n])
                self.sent += n
                if self.sent < len(part):
                    return False
            self.part, self.sent = self.part + 1, 0
        self.done = True
        return True


class _Recv(_Request):
    def __init__(self, link: SocketLink, peer: int, buf: memoryview, tag: int) -> None:
        super().__init__(link, peer)
        self.buf, self.tag = buf, tag

    def take(self, data) -> None:
        if len(data) != self.buf.nbytes:
            raise MXNetError(f"robust engine: rank {self.link.rank} expected {self.buf.nbytes} bytes "
                             f"with tag {self.tag} from rank {self.peer}, got {len(data)}")
        self.buf[:] = data
        self.done = True


class _Reader:
    """Where the next bytes from one peer go: the frame header, then the message's destination."""

    def __init__(self) -> None:
        self.head = bytearray(_FRAME.size)
        self.target: Optional[memoryview] = None
        self.mac: Optional[bytearray] = None      # the frame's MAC, read after its payload
        self.hasher: Any = None                    # the HMAC the payload is fed into
        self.req: Optional[_Recv] = None
        self.tag, self.got = 0, 0

    def view(self) -> memoryview:
        if self.target is None:
            return memoryview(self.head)[self.got:]
        if self.mac is not None:
            return memoryview(self.mac)[self.got:]
        return self.target[self.got:]

    def start(self, tag: int, req: Optional[_Recv], size: int) -> None:
        self.tag, self.req, self.got = tag, req, 0
        self.target = req.buf if req is not None else memoryview(bytearray(size))
