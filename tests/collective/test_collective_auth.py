"""The robust transport's authentication: strangers at the tracker's or a worker's port, forged frames."""
import io
import logging
import pickle
import socket
import threading
import time

import numpy as np
import pytest
from socket_ranks import run_ranks

from mxref.base import MXNetError
from mxref.collective import algorithms, auth
from mxref.collective.base import SUM, LinkError, reducer
from mxref.collective.tracker import Tracker
from mxref.collective.transport import _FRAME, SocketLink


class Evil:
    """Unpickling this creates a file: proof that nobody unpickled it."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def ring_sum(link):
    x = np.full(1 << 16, link.rank + 1.0)
    algorithms.ring_allreduce(link, x, reducer(SUM, x.dtype))
    return float(x.min()), float(x.max()), link.epoch


def wait_for(cond, seconds=10.0):
    end = time.monotonic() + seconds
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return cond()


@pytest.fixture
def tracker():
    t = Tracker(3, out=io.StringIO(), timeout=5).start()
    yield t
    t.close()


def test_a_stranger_knowing_only_the_ports_is_refused_logged_and_changes_nothing(tracker, tmp_path, caplog):
    """A join line sent to the tracker, a pickle sent to rank 0's listener and silent connections to
    both are dropped and logged; nothing is unpickled, and the job's result and epoch are unchanged.
    The silent stranger queued first at rank 0 delays nobody: the handshakes run side by side (the
    deadline of 60 s would otherwise outlast the test's)."""
    evil = pickle.dumps(Evil(tmp_path / "pwned"))
    strangers = []

    def attack_tracker():
        s = socket.create_connection((tracker.host, tracker.port))
        line = b'{"cmd": "join", "rank": 0, "addr": ["127.0.0.1", 1], "finishing": false}\n'
        s.sendall(line.ljust(128, b" "))
        strangers.append(s)
        strangers.append(socket.create_connection((tracker.host, tracker.port)))   # sends nothing

    def before(link):
        if link.rank == 0:   # queued in rank 0's backlog before any peer: accepted first
            strangers.append(socket.create_connection(tuple(link.addr)))     # sends nothing
            s = socket.create_connection(tuple(link.addr))
            s.sendall(evil.ljust(128, b"\0"))
            strangers.append(s)

    attack_tracker()
    with caplog.at_level(logging.WARNING, logger="mxref.collective"):
        out, links = run_ranks(3, tracker, ring_sum, before, connect_timeout=60)
        assert wait_for(lambda: len(tracker.refused) >= 2, 30)
    assert out == [(6.0, 6.0, 1)] * 3
    assert len(links[0].refused) == 2 and not links[1].refused and not links[2].refused
    assert any("still unauthenticated when the mesh was complete" in r for r in links[0].refused)
    assert any("unauthenticated connection" in r.getMessage() for r in caplog.records)
    assert not (tmp_path / "pwned").exists()
    for s in strangers:
        s.close()


def test_a_worker_with_the_wrong_secret_cannot_join(tracker):
    """A link holding another job's secret is refused by the tracker and says which tracker."""
    link = SocketLink((tracker.host, tracker.port), 0, 3, secret=auth.new_secret(), connect_timeout=5)
    try:
        with pytest.raises(MXNetError, match=f"tracker at {tracker.host}:{tracker.port}"):
            link.reconnect()
    finally:
        link.listener.close()
    assert wait_for(lambda: tracker.refused)
    assert "does not know the job's secret" in tracker.refused[0]


def raw_frame(link, peer, tag, payload, seqno, mac=None):
    """The bytes of one frame as ``isend`` would put them on the wire (or with a chosen MAC)."""
    if mac is None:
        mac = auth.frame_mac(link._keys[peer], link.rank, peer, seqno, tag, payload)
    return _FRAME.pack(tag, len(payload)) + payload + mac


def send_raw(link, peer, data):
    s = link.socks[peer]
    s.setblocking(True)
    s.sendall(data)
    s.setblocking(False)


@pytest.mark.parametrize("attack", ["forged", "replayed"])
def test_a_forged_or_replayed_frame_is_refused_and_the_job_goes_on(tracker, attack):
    """A frame with a wrong MAC, or a valid frame sent twice, is a LinkError naming the sender;
    after the rejoin the ranks compute the right sum."""
    payload = np.array([5.0]).tobytes()
    # Rank 1 rejoins only after rank 0 has read its frames: rejoining earlier would (rightly) make
    # the tracker abort the epoch rank 0 may still be building, and the frames would go with it.
    read = threading.Event()

    def work(link):
        if link.rank == 1:
            if attack == "forged":
                send_raw(link, 0, raw_frame(link, 0, 0, payload, 1, mac=bytes(auth.MAC)))
            else:
                frame = raw_frame(link, 0, 0, payload, 1)
                link._seq_out[0] += 1           # as if isend had sent it
                send_raw(link, 0, frame)
                send_raw(link, 0, frame)        # the copy an attacker replays
        if link.rank == 0:
            got = np.zeros(1)
            if attack == "replayed":
                link.recv(1, got)
                assert got[0] == 5.0
            try:
                with pytest.raises(LinkError, match="from rank 1 .*failed authentication"):
                    link.recv(1, got)
            finally:
                read.set()
        if link.rank == 1:
            assert read.wait(30)
        link.reconnect()            # the engine rejoins after a LinkError
        return ring_sum(link)
    out, _ = run_ranks(3, tracker, work, connect_timeout=5)
    assert out == [(6.0, 6.0, 2)] * 3


def test_handshake_rejects_a_wrong_secret_both_ways():
    """Neither side of a socket pair accepts a peer with another secret; equal secrets agree on a key."""
    for client_secret, server_secret in [(b"a" * 32, b"b" * 32), (b"a" * 32, b"a" * 32)]:
        a, b = socket.socketpair()
        keys, errors = [], []

        def server(b=b, server_secret=server_secret, keys=keys, errors=errors):
            try:
                keys.append(auth.serve_handshake(b, server_secret, 5))
            except (OSError, auth.AuthError) as exc:
                errors.append(exc)
            b.close()
        t = threading.Thread(target=server)
        t.start()
        try:
            keys.append(auth.client_handshake(a, client_secret, 5))
        except (OSError, auth.AuthError) as exc:
            errors.append(exc)
        t.join(10)
        a.close()
        if client_secret == server_secret:
            assert len(keys) == 2 and keys[0] == keys[1] and not errors
        else:
            assert not keys and errors


def test_header_mode_still_refuses_replays_and_strangers_but_not_a_rewritten_payload(tracker, monkeypatch):
    """MXREF_FRAME_MAC=header: the header and sequence are MAC'd (a replay fails), the payload is
    not (a frame whose bytes were rewritten in flight, header MAC intact, is delivered): the
    documented limit of the opt-in."""
    monkeypatch.setenv("MXREF_FRAME_MAC", "header")
    payload, rewritten = np.array([5.0]).tobytes(), np.array([7.0]).tobytes()
    read = threading.Event()      # as above: rank 1 rejoins only once rank 0 has read the frames

    def work(link):
        if link.rank == 1:
            header_mac = auth.frame_hasher(link._keys[0], 1, 0, 1, 0, len(payload), payload=False).digest()
            frame = _FRAME.pack(0, len(payload)) + rewritten + header_mac
            link._seq_out[0] += 1
            send_raw(link, 0, frame)
            send_raw(link, 0, frame)                    # and replayed
        if link.rank == 0:
            got = np.zeros(1)
            link.recv(1, got)
            assert got[0] == 7.0                        # the rewrite got through
            try:
                with pytest.raises(LinkError, match="from rank 1 .*failed authentication"):
                    link.recv(1, got)                   # the replay did not
            finally:
                read.set()
        if link.rank == 1:
            assert read.wait(30)
        link.reconnect()
        return ring_sum(link)
    out, _ = run_ranks(3, tracker, work, connect_timeout=5)
    assert out == [(6.0, 6.0, 2)] * 3


def test_frame_mac_mode_is_checked(monkeypatch):
    monkeypatch.setenv("MXREF_FRAME_MAC", "none")
    with pytest.raises(MXNetError, match="MXREF_FRAME_MAC must be 'payload' or 'header'"):
        auth.frame_mac_covers_payload()
    monkeypatch.delenv("MXREF_FRAME_MAC")
    assert auth.frame_mac_covers_payload()
