"""The robust transport's authentication: a per-job secret, a challenge-response handshake, MAC'd frames.

Every TCP connection of the tracker and of the worker mesh starts with a mutual HMAC-SHA256
challenge-response over the job's secret (as ``multiprocessing.connection`` does), with fixed-size
reads only, so nothing an unauthenticated peer sends is parsed::

    server -> client   nonce_s (32 random bytes)
    client -> server   nonce_c, HMAC(secret, b"client" + nonce_s + nonce_c)
    server -> client   HMAC(secret, b"server" + nonce_c + nonce_s)

Both ends then derive a session key ``HMAC(secret, b"session" + nonce_s + nonce_c)``; every later
frame carries ``HMAC(key, sender, receiver, seqno, tag, nbytes, payload)``. Fresh nonces make the
key differ on every connection, and the sequence number differs on every frame, so a frame copied
from another connection or replayed on the same one fails its check.

``MXREF_FRAME_MAC=header`` leaves the payload out of the worker mesh's frame MACs (the handshake,
the header, the sequence number and the tracker's messages stay authenticated): a stranger still
cannot join, inject, replay or reorder a frame, but one who can rewrite an established TCP stream
in flight could change a payload's bytes. On loopback that takes root; across hosts it takes a
place on the wire. It is an opt-in for single-host jobs, where the payload MAC is most of the cost
of a large allreduce (``docs/security.md``).
"""
from __future__ import annotations

import hmac
import os
import secrets
import socket
import struct
import time
from typing import Optional

from ..base import MXNetError

SECRET_ENV = "MXREF_JOB_SECRET"
FRAME_MAC_ENV = "MXREF_FRAME_MAC"
NONCE = 32
MAC = 32                        # bytes of an HMAC-SHA256
_MAC_HEAD = struct.Struct("<qqqqq")   # sender, receiver, seqno, tag, nbytes


class AuthError(MXNetError):
    """A peer did not prove it knows the job's secret (or a frame failed its check)."""


def new_secret() -> bytes:
    """A fresh random 32-byte job secret (the launcher makes one per job)."""
    return secrets.token_bytes(32)


def secret_from_env() -> bytes:
    """The job's secret from ``MXREF_JOB_SECRET`` (hex), which the launcher sets for its workers."""
    text = os.environ.get("MXREF_JOB_SECRET")
    if not text:
        raise MXNetError("collective engine 'robust' needs MXREF_JOB_SECRET in the environment (the job's "
                         "secret, set by python -m mxref.tools.launch --engine robust)")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise MXNetError("MXREF_JOB_SECRET must be hex") from None


def read_exact(s: socket.socket, n: int, deadline: Optional[float] = None) -> bytes:
    """Exactly ``n`` bytes from a blocking socket; ``OSError`` on EOF or past ``deadline`` (monotonic)."""
    data = bytearray()
    while len(data) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("deadline passed")
            s.settimeout(left)
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("closed during the handshake")
        data += chunk
    return bytes(data)


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.digest(key, b"".join(parts), "sha256")


def serve_handshake(s: socket.socket, secret: bytes, timeout: float) -> bytes:
    """The accepting side: challenge the peer; its session key, or ``AuthError`` / ``OSError``."""
    deadline = time.monotonic() + timeout
    nonce_s = secrets.token_bytes(NONCE)
    s.settimeout(timeout)
    s.sendall(nonce_s)
    reply = read_exact(s, NONCE + MAC, deadline)
    nonce_c, proof = reply[:NONCE], reply[NONCE:]
    if not hmac.compare_digest(proof, _mac(secret, b"client", nonce_s, nonce_c)):
        raise AuthError("the peer does not know the job's secret")
    s.sendall(_mac(secret, b"server", nonce_c, nonce_s))
    return _mac(secret, b"session", nonce_s, nonce_c)


class Challenged:
    """``serve_handshake`` for a non-blocking accept loop: one stranger that sends nothing must not
    hold up the real peers, so each accepted socket is fed whatever bytes it has when ``select``
    says it is readable. After the handshake it also collects ``then`` more bytes (the first message).
    """

    def __init__(self, s: socket.socket, where, secret: bytes, then: int) -> None:
        self.s, self.where, self.secret, self.then = s, where, secret, then
        self.nonce = secrets.token_bytes(NONCE)
        self.buf = bytearray()
        self.key: Optional[bytes] = None
        s.settimeout(1.0)
        s.sendall(self.nonce)      # 32 bytes into an empty send buffer: never blocks
        s.setblocking(False)

    def feed(self) -> Optional[bytes]:
        """Read what is there; the ``then`` bytes once complete, else None. ``AuthError``/``OSError``."""
        need = (NONCE + MAC if self.key is None else self.then) - len(self.buf)
        chunk = self.s.recv(need)
        if not chunk:
            raise ConnectionResetError("closed during the handshake")
        self.buf += chunk
        if self.key is None and len(self.buf) == NONCE + MAC:
            nonce_c, proof = bytes(self.buf[:NONCE]), bytes(self.buf[NONCE:])
            if not hmac.compare_digest(proof, _mac(self.secret, b"client", self.nonce, nonce_c)):
                raise AuthError("the peer does not know the job's secret")
            self.s.setblocking(True)
            self.s.settimeout(1.0)
            self.s.sendall(_mac(self.secret, b"server", nonce_c, self.nonce))
            self.s.setblocking(False)
            self.key, self.buf = _mac(self.secret, b"session", self.nonce, nonce_c), bytearray()
            return None
        if self.key is not None and len(self.buf) == self.then:
            return bytes(self.buf)
        return None


def open_message(data: bytes, key: bytes, sender: int, receiver: int, seqno: int) -> bytes:
    """The payload of one whole ``send_message`` held in ``data``; ``AuthError`` if it fails its check."""
    (n,) = struct.unpack("<q", data[:8])
    payload, mac = data[8:-MAC], data[-MAC:]
    if n != len(payload) or not hmac.compare_digest(mac, frame_mac(key, sender, receiver, seqno, 0, payload)):
        raise AuthError("a message failed its authentication check")
    return payload


def client_handshake(s: socket.socket, secret: bytes, timeout: float) -> bytes:
    """The connecting side: answer the challenge and check the server's proof; the session key."""
    deadline = time.monotonic() + timeout
    nonce_s = read_exact(s, NONCE, deadline)
    nonce_c = secrets.token_bytes(NONCE)
    s.sendall(nonce_c + _mac(secret, b"client", nonce_s, nonce_c))
    proof = read_exact(s, MAC, deadline)
    if not hmac.compare_digest(proof, _mac(secret, b"server", nonce_c, nonce_s)):
        raise AuthError("the server does not know the job's secret")
    return _mac(secret, b"session", nonce_s, nonce_c)


def frame_mac_covers_payload() -> bool:
    """``MXREF_FRAME_MAC``: ``payload`` (the default) or ``header`` (see the module's docstring)."""
    mode = os.environ.get(FRAME_MAC_ENV, "payload")
    if mode not in ("payload", "header"):
        raise MXNetError(f"{FRAME_MAC_ENV} must be 'payload' or 'header', got {mode!r}")
    return mode == "payload"


class _HeaderOnly:
    """A frame hasher that ignores the payload (``MXREF_FRAME_MAC=header``)."""

    def __init__(self, h) -> None:
        self._h = h

    def update(self, _data) -> None:
        pass

    def digest(self) -> bytes:
        return self._h.digest()


def frame_hasher(key: bytes, sender: int, receiver: int, seqno: int, tag: int, nbytes: int,
                 payload: bool = True):
    """An HMAC to feed a frame's payload into piece by piece, as it is sent or received (with
    ``payload=False``, one over the header alone that ignores what it is fed)."""
    h = hmac.new(key, _MAC_HEAD.pack(sender, receiver, seqno, tag, nbytes), "sha256")
    return h if payload else _HeaderOnly(h)


def frame_mac(key: bytes, sender: int, receiver: int, seqno: int, tag: int, payload) -> bytes:
    """The MAC that follows one frame's payload (``payload``: bytes or a memoryview)."""
    h = frame_hasher(key, sender, receiver, seqno, tag, len(payload))
    h.update(payload)
    return h.digest()


def send_message(s: socket.socket, key: bytes, sender: int, receiver: int, seqno: int,
                 payload: bytes) -> None:
    """One length-prefixed, MAC'd message on a blocking socket (the tracker's JSON lines)."""
    mac = frame_mac(key, sender, receiver, seqno, 0, payload)
    s.sendall(struct.pack("<q", len(payload)) + payload + mac)


def recv_message(s: socket.socket, key: bytes, sender: int, receiver: int, seqno: int,
                 deadline: Optional[float] = None, limit: int = 1 << 20) -> bytes:
    """Read and check one ``send_message``; ``AuthError`` if its MAC is wrong."""
    (n,) = struct.unpack("<q", read_exact(s, 8, deadline))
    if not 0 <= n <= limit:
        raise AuthError(f"message of {n} bytes")
    payload = read_exact(s, n, deadline)
    expected = frame_mac(key, sender, receiver, seqno, 0, payload)
    if not hmac.compare_digest(read_exact(s, MAC, deadline), expected):
        raise AuthError("a message failed its authentication check")
    return payload
