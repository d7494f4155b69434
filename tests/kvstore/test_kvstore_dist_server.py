"""The parameter server's consistency logic, driven in-process with a stand-in for the comm thread.

No MPI here: messages are handed straight to the server's handlers and the replies it would send
are recorded, so sync rounds, finished workers, bounded delay, timeouts and barriers are checked
deterministically (the same logic runs under mpiexec in ``test_kvstore_dist_mpi.py``).
"""
import time

import numpy as np
import pytest

import mxref as mx
from mxref.kvstore.compression import GradientCompression
from mxref.kvstore.ps.comm import Cmd, Message
from mxref.kvstore.ps.roles import assign_roles
from mxref.kvstore.ps.server import Server

KEY = (0, "w", 0)
W1, W2, W3 = 1, 2, 3            # MPI ranks of workers 0, 1, 2 (one server: rank 0)


class Recorder:
    """Stands in for ``Comm``: keeps every message the server posts."""

    def __init__(self):
        self.sent = []

    def post(self, dest, cmd, rid=0, key=None, meta=None, data=None):
        self.sent.append((dest, Cmd(cmd), rid, meta, None if data is None else np.array(data)))

    def take(self, cmd=None):
        out = [m for m in self.sent if cmd is None or m[1] == cmd]
        self.sent = []
        return out


def message(src, cmd, rid=1, key=KEY, meta=None, data=None):
    raw = None if data is None else np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return Message(src, cmd, rid, key, meta or {}, raw)


@pytest.fixture
def server():
    srv = Server(None, assign_roles(0, 4, 1), comm=Recorder())
    srv.active, srv.mine = {W1, W2, W3}, []
    srv.handle = lambda m: srv._handle(m, srv.active, srv.mine)
    return srv


def init(srv, mode, tau=0, value=None):
    """INIT of KEY under the consistency model ``dist_<mode>`` (ssp takes ``tau``)."""
    value = np.zeros(4, np.float32) if value is None else value
    options = {"tau": tau} if mode == "ssp" else {}
    srv.handle(message(W1, Cmd.INIT, meta={"shape": (4,), "dtype": "<f4", "mode": f"dist_{mode}",
                                           "options": options}, data=value))
    assert srv.comm.take() == [(W1, Cmd.REPLY, 1, None, None)]


def push(srv, src, value, rid=1):
    srv.handle(message(src, Cmd.PUSH, rid, data=np.full(4, value, np.float32)))


def stored(srv):
    return srv._parts[KEY].stored.asnumpy()


def test_sync_withholds_acks_until_every_worker_pushed(server):
    """Acks for a round go out only with the last push; the sum replaces the value; pulls see it."""
    init(server, "sync")
    push(server, W1, 1)
    push(server, W2, 2)
    assert server.comm.take() == []
    push(server, W3, 3)
    assert sorted(m[0] for m in server.comm.take(Cmd.REPLY)) == [W1, W2, W3]
    assert (stored(server) == 6).all()
    server.handle(message(W2, Cmd.PULL, rid=7))
    (reply,) = server.comm.take()
    assert reply[:3] == (W2, Cmd.REPLY, 7) and (reply[4].view(np.float32) == 6).all()


def test_sync_round_counts_workers_not_requests(server):
    """A worker's second push before the round closes waits for the next round."""
    init(server, "sync")
    push(server, W1, 1, rid=1)
    push(server, W1, 10, rid=2)
    push(server, W2, 2)
    push(server, W3, 3)
    assert [m[:3] for m in server.comm.take()] == [(W1, Cmd.REPLY, 1), (W2, Cmd.REPLY, 1),
                                                  (W3, Cmd.REPLY, 1)]
    assert (stored(server) == 6).all()
    assert server._parts[KEY].model.contrib == {W1}      # the early push opened round two


def test_finished_worker_stops_counting(server):
    """After DONE from a worker, open and later rounds complete without it."""
    init(server, "sync")
    push(server, W1, 1)
    push(server, W2, 2)
    server.active.discard(W3)                     # what the update thread does on ("done", W3)
    for kp in server.mine:
        server._progress(kp, server.active)
    assert len(server.comm.take(Cmd.REPLY)) == 2 and (stored(server) == 3).all()
    push(server, W1, 5)
    push(server, W2, 5)
    assert len(server.comm.take(Cmd.REPLY)) == 2 and (stored(server) == 10).all()


def test_sync_with_server_optimizer(server):
    """With an updater, the round's sum goes through it once (SGD: w -= lr * sum)."""
    init(server, "sync", value=np.ones(4, np.float32))
    server._updaters[0] = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.5))
    for src, v in ((W1, 1), (W2, 2), (W3, 3)):
        push(server, src, v)
    assert np.allclose(stored(server), 1 - 0.5 * 6)


def test_bounded_delay_holds_acks_beyond_tau(server):
    """ssp, tau=1: a worker two pushes ahead of the slowest waits; updates apply on arrival."""
    init(server, "ssp", tau=1)
    server._updaters[0] = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=-1.0))
    for rid in (1, 2, 3):
        push(server, W1, 1, rid)
    assert [m[2] for m in server.comm.take(Cmd.REPLY)] == [1]      # clocks 2 and 3 held
    assert (stored(server) == 3).all()                              # yet all three applied
    push(server, W2, 1)
    assert server.comm.take() == [(W2, Cmd.REPLY, 1, None, None)]  # W3 still at clock 0
    push(server, W3, 1)
    assert sorted(m[2] for m in server.comm.take(Cmd.REPLY) if m[0] == W1) == [2]
    server.active -= {W2, W3}
    server._progress(server.mine[0], server.active)
    assert [m[2] for m in server.comm.take(Cmd.REPLY)] == [3]


def test_async_applies_at_once_and_needs_an_updater(server):
    """async: every push is acknowledged at once; without an updater the push is refused."""
    init(server, "async")
    with pytest.raises(ValueError, match="Updater needs to be set for async mode"):
        push(server, W1, 1)
    server._updaters[0] = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=1.0))
    push(server, W2, 2)
    assert server.comm.take() == [(W2, Cmd.REPLY, 1, None, None)] and (stored(server) == -2).all()


def test_round_timeout_names_missing_workers(server, monkeypatch):
    """A round open past MXREF_KV_TIMEOUT fails its pushes, naming who did not push."""
    monkeypatch.setenv("MXREF_KV_TIMEOUT", "0.5")
    init(server, "sync")
    push(server, W2, 1)
    server._check_rounds(server.mine, server.active, time.monotonic() + 1)
    ((dest, cmd, _, meta, _),) = server.comm.take()
    assert (dest, cmd) == (W2, Cmd.ERROR)
    assert "worker 0 (MPI rank 1), worker 2 (MPI rank 3) did not push" in meta["msg"]
    assert "pushed: worker 1 (MPI rank 2)" in meta["msg"]


def test_push_size_checked_and_compressed_push_dequantized(server):
    """A push of the wrong size names the key; 2-bit pushes are dequantized before merging."""
    init(server, "sync")
    with pytest.raises(ValueError, match="key 'w' part 0 holds 16 bytes"):
        server.handle(message(W1, Cmd.PUSH, data=np.zeros(3, np.float32)))
    gc = server._compression[0] = GradientCompression("2bit", 0.5)
    grads = {W1: [0.7, -0.7, 0.2, 0.0], W2: [0.5, 0.0, -0.6, 0.1], W3: [0.0, 0.0, 0.0, 0.9]}
    for src, g in grads.items():
        codes = gc.quantize(np.array(g, np.float32), np.zeros(4, np.float32))
        server.handle(message(src, Cmd.PUSH, meta={"compressed": True}, data=codes))
    assert np.array_equal(stored(server), np.array([1.0, -0.5, -0.5, 0.5], np.float32))


def test_barrier_counts_active_workers(server):
    """A barrier opens when every active worker arrived; a DONE can complete it."""
    server._control_message(message(W1, Cmd.BARRIER, rid=4, key=None))
    server._control_message(message(W2, Cmd.BARRIER, rid=5, key=None))
    server._check_barrier(time.monotonic())
    assert server.comm.take() == []
    server._control_message(message(W3, Cmd.DONE, rid=6, key=None))
    server._check_barrier(time.monotonic())
    assert [m[:3] for m in server.comm.take()] == [(W3, Cmd.REPLY, 6), (W1, Cmd.REPLY, 4),
                                                  (W2, Cmd.REPLY, 5)]
    assert all(q.get_nowait() == ("done", W3) for q in server._shards)


def test_init_naming_an_unknown_model_is_refused(server):
    """A key part's INIT names its consistency model; one this server does not know fails."""
    with pytest.raises(mx.MXNetError, match="unknown consistency model 'dist_nope'"):
        server.handle(message(W1, Cmd.INIT, meta={"shape": (4,), "dtype": "<f4", "mode": "dist_nope",
                                                  "options": {}}, data=np.zeros(4, np.float32)))
