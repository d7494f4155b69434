"""The robust engine's TCP transport and tracker, in threads: rendezvous, big sends, lost peers."""
import io
import threading

import numpy as np
import pytest
from socket_ranks import run_ranks

from mxref.base import MXNetError
from mxref.collective import algorithms
from mxref.collective.base import SUM, LinkError, reducer
from mxref.collective.tracker import Tracker
from mxref.collective.transport import SocketLink


def in_threads(world, fn, tracker):
    return run_ranks(world, tracker, fn)[0]


@pytest.fixture
def tracker():
    t = Tracker(3, out=io.StringIO()).start()
    yield t
    t.close()


def test_rendezvous_then_ring_and_tree_over_tcp(tracker):
    """Three links meet at the tracker; a 4 MB ring allreduce (every rank sends first) completes."""
    def work(link):
        big = np.full(1 << 20, link.rank + 1.0, np.float32)
        algorithms.ring_allreduce(link, big, reducer(SUM, big.dtype))
        small = np.array([link.rank + 1])
        algorithms.tree_allreduce(link, small, reducer(SUM, small.dtype))
        return float(big.min()), float(big.max()), int(small[0]), link.epoch
    assert in_threads(3, work, tracker) == [(6.0, 6.0, 6, 1)] * 3


def test_a_closed_peer_is_a_link_error_and_everyone_rejoins(tracker):
    """When rank 2 drops its sockets, the others' receive raises LinkError; a rejoin opens epoch 2."""
    meshed = threading.Barrier(3, timeout=30)   # every mesh of epoch 1 is complete before the drop

    def work(link):
        meshed.wait()
        if link.rank == 2:
            link._drop()
        else:
            with pytest.raises(LinkError):
                link.recv(2, np.zeros(4))
        link.reconnect()
        x = np.array([1.0])
        algorithms.tree_allreduce(link, x, reducer(SUM, x.dtype))
        return link.epoch, x[0]
    assert in_threads(3, work, tracker) == [(2, 3.0)] * 3


def test_tracker_prints_and_missing_environment_is_explained(tracker, monkeypatch):
    """tracker_print lands on the tracker's stream; a robust engine without the launcher says how."""
    link = SocketLink((tracker.host, tracker.port), 0, 3, secret=tracker.secret)
    link.tracker_print("[0] hello")
    link.listener.close()
    for _ in range(100):
        if "[0] hello" in tracker.out.getvalue():
            break
        threading.Event().wait(0.01)
    assert "[0] hello" in tracker.out.getvalue()
    monkeypatch.delenv("MXREF_TRACKER_URI", raising=False)
    with pytest.raises(MXNetError, match="needs MXREF_TRACKER_URI.*mxref.tools.launch --engine robust"):
        SocketLink.from_env()


@pytest.mark.timeout(60)
def test_a_rank_that_dies_while_the_mesh_is_built_does_not_stall_the_others(tracker):
    """Rank 2 joins epoch 1 and dies before connecting to anyone; ranks 0 and 1 wait to accept it.
    Its restarted process joins again: the tracker aborts epoch 1 on the open join connections,
    so 0 and 1 rejoin at once (connect_timeout is 300 s: waiting it out would hit the hard
    timeout) and everyone meets in epoch 2."""
    world, outcome = 3, {}
    ghost = SocketLink((tracker.host, tracker.port), 2, world, timeout=20, secret=tracker.secret,
                       connect_timeout=300)
    ghost_joined = threading.Event()

    def dying_rank():
        reply = ghost._ask_tracker({"cmd": "join", "rank": 2, "addr": ghost.addr, "finishing": False},
                                   wait=True)
        outcome["ghost epoch"] = reply["epoch"]
        ghost_joined.set()          # ... and never connects: it "died" here

    def live_rank(rank):
        link = SocketLink((tracker.host, tracker.port), rank, world, timeout=20, secret=tracker.secret,
                          connect_timeout=300)
        try:
            link.reconnect()
            outcome[rank] = (link.epoch, *ring_result(link))
        finally:
            link._drop()
            link.listener.close()

    def restarted_rank():
        ghost_joined.wait(30)
        ghost.listener.close()
        live_rank(2)

    def ring_result(link):
        x = np.full(1 << 12, link.rank + 1.0)
        algorithms.ring_allreduce(link, x, reducer(SUM, x.dtype))
        return float(x.min()), float(x.max())

    threads = [threading.Thread(target=f, args=a) for f, a in
               [(live_rank, (0,)), (live_rank, (1,)), (dying_rank, ()), (restarted_rank, ())]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(50)
    assert not any(t.is_alive() for t in threads), outcome
    assert outcome["ghost epoch"] == 1
    assert outcome[0] == outcome[1] == outcome[2] == (2, 6.0, 6.0), outcome
