"""The tracker: the rendezvous where robust workers find each other, at start and after every failure.

Protocol (one JSON line each way over TCP): a worker sends
``{"cmd": "join", "rank": r, "addr": [host, port], "finishing": bool}`` and gets back, once all W
ranks have joined, ``{"epoch": e, "peers": {rank: [host, port]}}``; it then connects to every
peer. A restarted worker simply joins again under its rank. ``{"cmd": "done", "rank": r}`` says a
rank left after the final consensus, which releases ranks still rejoining with ``finishing`` set
(they get ``{"finished": true}``). ``{"cmd": "print", "msg": ...}`` prints on the tracker.

While the ranks of an epoch build their mesh, the tracker keeps each one's join connection open.
If any rank ``r`` joins again before the next epoch opens (a process of the epoch died and was
restarted, or its own mesh build failed), the tracker sends ``{"abort": e, "rank": r}`` on every
such connection; a rank still waiting to accept ``r``'s connection then gives the epoch up and
rejoins at once instead of waiting out ``MXREF_COLLECTIVE_TIMEOUT`` (a rank that already holds
``r``'s connection ignores it: it will see the broken link at first use). A rank closes its
connection when its mesh is complete; the tracker closes the rest when the next epoch opens.

Every connection first passes the job-secret handshake of ``auth.py`` (within ``timeout``
seconds, ``MXREF_COLLECTIVE_TIMEOUT``), and the request and reply travel as MAC'd messages; a
peer that fails is logged and dropped. Each connection has its own thread, so one that sends
nothing delays nobody else.
"""
from __future__ import annotations

import json
import logging
import socket
import sys
import threading
import time
from typing import Dict, List, Optional, Tuple

from . import auth

log = logging.getLogger("mxref.collective")
TO_TRACKER, FROM_TRACKER = (0, 1), (1, 0)    # the (sender, receiver) of the tracker's messages


def collective_timeout() -> float:
    """Seconds for one connect, accept, handshake or tracker request (``MXREF_COLLECTIVE_TIMEOUT``)."""
    import os
    return float(os.environ.get("MXREF_COLLECTIVE_TIMEOUT", 30))


class Tracker:
    """A threaded rendezvous server for ``world_size`` robust workers (start it, then the workers)."""

    def __init__(self, world_size: int, host: str = "127.0.0.1", port: int = 0, out=None,
                 secret: Optional[bytes] = None, timeout: Optional[float] = None) -> None:
        self.world_size = world_size
        self.secret = secret or auth.new_secret()
        self.timeout = collective_timeout() if timeout is None else timeout
        self.refused: List[str] = []      # "host:port: why" of every connection dropped unauthenticated
        self.sock = socket.create_server((host, port), backlog=max(16, 2 * world_size))
        self.host, self.port = self.sock.getsockname()[:2]
        self.out = out or sys.stdout
        self.epoch = 0
        self._waiting: Dict[int, Tuple[socket.socket, list, bool]] = {}
        # the open epoch's join connections: rank -> [conn, key, next seqno]
        self._building: Dict[int, list] = {}
        self._done = False
        self._keys: Dict[socket.socket, bytes] = {}   # each waiting connection's session key
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._closed = False

    def start(self) -> "Tracker":
        self._thread = threading.Thread(target=self._serve, name="collective-tracker", daemon=True)
        self._thread.start()
        return self

    def env(self) -> Dict[str, str]:
        """The environment a worker needs to find this tracker."""
        return {"MXREF_TRACKER_URI": str(self.host), "MXREF_TRACKER_PORT": str(self.port),
                "MXREF_WORLD_SIZE": str(self.world_size), auth.SECRET_ENV: self.secret.hex()}

    def close(self) -> None:
        self._closed = True
        self.sock.close()
        with self._lock:
            for conn, _, _ in self._waiting.values():
                conn.close()
            self._waiting.clear()
            self._close_building()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            where = "%s:%s" % conn.getpeername()[:2]
        except OSError:
            where = "?"
        try:
            key = auth.serve_handshake(conn, self.secret, self.timeout)
        except (OSError, auth.AuthError) as exc:
            self.refused.append(f"{where}: {exc}")
            log.warning("collective tracker: dropped an unauthenticated connection from %s (%s)", where, exc)
            conn.close()
            return
        try:
            line = auth.recv_message(conn, key, *TO_TRACKER, 0, time.monotonic() + self.timeout)
            msg = json.loads(line)
            conn.settimeout(None)      # a join waits, on purpose, until every rank has joined
        except (OSError, ValueError) as exc:
            log.warning("collective tracker: bad request from %s (%s)", where, exc)
            conn.close()
            return
        cmd = msg.get("cmd")
        if cmd == "print":
            # One write per message: print() writes the newline apart, so two ranks' messages
            # handled by two threads could share a line.
            self.out.write(f"{msg.get('msg', '')}\n")
            self.out.flush()
            conn.close()
        elif cmd == "done":
            with self._lock:
                self._done = True
                self._release_finishing()
            conn.close()
        elif cmd == "join":
            with self._lock:
                self._abort_building(int(msg["rank"]))
                old = self._waiting.pop(int(msg["rank"]), None)
                if old is not None:      # a restarted process replaces its dead predecessor
                    self._keys.pop(old[0], None)
                    old[0].close()
                self._keys[conn] = key
                self._waiting[int(msg["rank"])] = (conn, msg["addr"], bool(msg.get("finishing")))
                if len(self._waiting) == self.world_size:
                    self._open_epoch()
                elif self._done:
                    self._release_finishing()
        else:
            conn.close()

    def _reply(self, conn: socket.socket, obj, keep: bool = False) -> None:
        key = self._keys.pop(conn)
        try:
            auth.send_message(conn, key, *FROM_TRACKER, 0, json.dumps(obj).encode())
        except OSError:
            keep = False
        if keep:
            return
        conn.close()

    def _open_epoch(self) -> None:
        self._close_building()
        self.epoch += 1
        peers = {r: addr for r, (_, addr, _) in self._waiting.items()}
        for rank, (conn, _, _) in self._waiting.items():
            key = self._keys[conn]
            self._reply(conn, {"epoch": self.epoch, "peers": peers}, keep=True)
            self._building[rank] = [conn, key, 1]
        self._waiting.clear()

    def _abort_building(self, rejoined: int) -> None:
        """Rank ``rejoined`` joins again: tell every rank of the open epoch still on its join
        connection (ranks whose mesh is complete closed theirs; those sends just fail)."""
        text = json.dumps({"abort": self.epoch, "rank": rejoined}).encode()
        for rank, entry in list(self._building.items()):
            conn, key, seq = entry
            try:
                auth.send_message(conn, key, *FROM_TRACKER, seq, text)
                entry[2] = seq + 1
            except OSError:
                conn.close()
                del self._building[rank]

    def _close_building(self) -> None:
        for conn, _, _ in self._building.values():
            conn.close()
        self._building.clear()

    def _release_finishing(self) -> None:
        for rank in [r for r, (_, _, fin) in self._waiting.items() if fin]:
            self._reply(self._waiting.pop(rank)[0], {"finished": True})
