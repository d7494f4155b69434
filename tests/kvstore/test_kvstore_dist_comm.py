"""The communication thread in one process, sending to itself over each link: MPI's singleton
mode (COMM_SELF) and the in-process link (a world of one thread).

Header and data pairing, replies received in place, timeouts and errors that name the rank,
and a failing thread that fails every waiter -- without mpiexec.
"""
import threading

import numpy as np
import pytest

import mxref as mx
from mxref.collective.local_engine import LocalLink, LocalWorld
from mxref.kvstore.ps.comm import Cmd, Comm
from mxref.kvstore.ps.roles import Roles

ROLES = Roles(0, 2, 1)      # this process plays server 0; its replies come from "MPI rank 0"


def _link(kind):
    if kind == "in-process":
        return LocalLink(LocalWorld(1), 0)
    MPI = pytest.importorskip("mpi4py.MPI", reason="needs mpi4py")
    from mxref.collective.mpi_engine import MPILink
    return MPILink(MPI.COMM_SELF.Dup())


@pytest.fixture(params=["MPI", "in-process"])
def echo(request):
    """A Comm whose handler answers PULL with twice the data, ERRORs on PUSH, ignores INIT."""
    holder = {}

    def handler(msg):
        comm = holder["comm"]
        if msg.cmd == Cmd.PULL:
            data = None if msg.data is None else msg.data.view(np.float32) * 2
            comm.post(msg.src, Cmd.REPLY, msg.rid, msg.key, None, data)
        elif msg.cmd == Cmd.PUSH:
            comm.post(msg.src, Cmd.ERROR, msg.rid, msg.key, {"msg": "no such key"})
        elif msg.cmd == Cmd.BARRIER:
            raise RuntimeError("handler exploded")
    comm = holder["comm"] = Comm(_link(request.param), ROLES, handler).start()
    yield comm
    comm.stop()


def wait_all(n):
    done, results = threading.Event(), []

    def callback(msg, err):
        results.append((msg, err))
        if len(results) == n:
            done.set()
    return callback, done, results


def test_many_requests_pair_header_and_data(echo):
    """Twenty requests of different sizes in flight at once: each reply lands in its own buffer."""
    sizes = [0, 1, 3, 1000, 70000] * 4
    outs = [np.full(n, -1, np.float32) for n in sizes]
    callback, done, results = wait_all(len(sizes))
    for i, (n, out) in enumerate(zip(sizes, outs)):
        echo.request(0, Cmd.PULL, ("k", i), data=np.arange(n, dtype=np.float32) + i, recv_into=out,
                     callback=callback)
    assert done.wait(20)
    assert all(err is None for _, err in results)
    for i, (n, out) in enumerate(zip(sizes, outs)):
        assert np.array_equal(out, 2 * (np.arange(n, dtype=np.float32) + i)), i


def test_timeout_names_the_silent_rank(echo):
    """A request nobody answers fails after its timeout, naming the rank and the request."""
    with pytest.raises(mx.MXNetError, match=r"server 0 \(MPI rank 0\) did not answer INIT of key 'w'"):
        echo.call([0], Cmd.INIT, "w", timeout=0.2)


def test_error_reply_and_size_mismatch(echo):
    """A server's ERROR reply raises with its message; a reply too big for its buffer is refused."""
    with pytest.raises(mx.MXNetError, match="PUSH of key 'w' failed on server 0.*no such key"):
        echo.call([0], Cmd.PUSH, "w")
    callback, done, results = wait_all(1)
    echo.request(0, Cmd.PULL, "w", data=np.ones(4, np.float32), recv_into=np.zeros(3, np.float32),
                 callback=callback, what="pull of key 'w'")
    assert done.wait(10)
    assert "does not fit" in str(results[0][1]) and "pull of key 'w'" in str(results[0][1])


def test_failed_thread_fails_every_waiter(echo):
    """When the thread itself fails, waiters and later requests get the error, nobody hangs."""
    kind = echo.link.kind
    with pytest.raises(mx.MXNetError, match=f"communication .{kind}. failed on server 0.*handler exploded"):
        echo.call([0], Cmd.BARRIER, timeout=10)
    with pytest.raises(mx.MXNetError, match="handler exploded"):
        echo.call([0], Cmd.PULL, "w", timeout=10)


def test_create_outside_mpiexec_explains(monkeypatch):
    """A dist store in a lone process (no mpiexec) is refused with how to start the job."""
    pytest.importorskip("mpi4py.MPI", reason="needs mpi4py")
    from mxref.kvstore import ps
    monkeypatch.delenv("MXREF_NUM_SERVERS", raising=False)
    with pytest.raises(mx.MXNetError, match=r"1 MPI process\(es\) cannot hold 1 server.*mpiexec -n W\+S"):
        ps.create("dist_sync")
    with pytest.raises(mx.MXNetError, match="bad staleness"):
        ps.create("dist_ssp:x")


def test_link_failure_fails_every_request_in_flight():
    """When the link itself fails (here a peer of an in-process world died), every request in
    flight and every later one fails at once with the link's kind and this process's name."""
    world = LocalWorld(2, timeout=30)
    comm = Comm(LocalLink(world, 0), ROLES).start()
    try:
        callback, done, results = wait_all(3)
        for i in range(3):
            comm.request(1, Cmd.PULL, ("k", i), callback=callback, timeout=60)
        world.fail(1)
        assert done.wait(20)
        assert all(msg is None and "communication (in-process) failed on server 0 (MPI rank 0)" in str(err)
                   for msg, err in results), results
        with pytest.raises(mx.MXNetError, match="communication .in-process. failed"):
            comm.call([1], Cmd.PULL, "w", timeout=10)
    finally:
        comm.stop()
