"""Allreduce plans (one call's set-up made once per shape, dtype and op), the API's direct call of
them, the thread's engine slot, the link's bound exchange and the mpi engine's waiting mode."""
import threading

import numpy as np
import pytest

from mxref import collective
from mxref.base import MXNetError
from mxref.collective.link_engine import LinkEngine
from mxref.collective.local_engine import LocalEngine, LocalLink, LocalWorld


def test_a_repeated_call_reuses_its_plan_and_shaped_arrays_reduce():
    """The first call of a (shape, dtype, op) makes a plan, later calls run the same one; shaped
    arrays, several dtypes and every call count towards seqno."""
    def work():
        eng = collective._engine()
        r = collective.get_rank()
        outs = []
        for it in range(3):
            a = np.arange(12, dtype=np.float32).reshape(3, 4) + r + it
            collective.allreduce(a, collective.SUM)
            outs.append(a)
        plan = eng.plans[((3, 4), np.dtype(np.float32), collective.SUM)]
        b = np.full((2, 2, 2), r, np.int64)
        collective.allreduce(b, collective.MAX)
        collective.allreduce(np.zeros(3), "sum")             # a name: the API's general path
        same = plan is eng.plans[((3, 4), np.dtype(np.float32), collective.SUM)]
        return outs, b, same, eng.seqno, len(eng.plans)
    for outs, b, same, seqno, nplans in collective.run_local(3, work):
        for it, a in enumerate(outs):
            np.testing.assert_array_equal(a, 3 * np.arange(12).reshape(3, 4) + 3 + 3 * it)
        assert (b == 2).all() and same and seqno == 5 and nplans == 3


def test_bad_calls_raise_and_leave_no_plan():
    """An unknown op code, bitor on floats and arrays the result cannot be written into are
    MXNetError naming the fault; none of them leaves a plan behind."""
    eng = collective._engine()
    with pytest.raises(MXNetError, match="unknown op 7"):
        collective.allreduce(np.zeros(3), 7)
    with pytest.raises(MXNetError, match="bitor needs an integer"):
        collective.allreduce(np.zeros(3), collective.BITOR)
    with pytest.raises(MXNetError, match="C-contiguous, writeable"):
        collective.allreduce(np.zeros((4, 4))[:, 1], collective.SUM)
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(MXNetError, match="writeable"):
        collective.allreduce(ro, collective.SUM)
    assert not any(key[2] in (7, collective.BITOR) for key in eng.plans)


def test_the_plan_cache_is_bounded():
    eng = LocalEngine()
    for n in range(300):
        eng.allreduce(np.zeros(n), collective.SUM)
    assert 0 < len(eng.plans) <= 256 and eng.seqno == 300


def test_an_engine_that_changes_allreduce_gets_no_direct_plans(monkeypatch):
    class Counting(LinkEngine):
        calls = 0

        def allreduce(self, buf, op, prepare_fun=None):
            Counting.calls += 1
            super().allreduce(buf, op, prepare_fun)
    eng = Counting(LocalLink(LocalWorld(1), 0))
    assert eng.plans is None and LocalEngine().plans is not None
    monkeypatch.setattr(collective._tls, "engine", eng)
    collective.allreduce(np.zeros(2), collective.SUM)
    assert Counting.calls == 1


def test_a_thread_without_its_own_engine_reads_none_then_the_process_engine():
    seen = []
    thread = threading.Thread(target=lambda: seen.append(collective._tls.engine))
    thread.start()
    thread.join()
    assert seen == [None]
    eng = LocalEngine()
    collective._process_engine, saved = eng, collective._process_engine
    try:
        got = []
        thread = threading.Thread(target=lambda: got.append(collective._engine()))
        thread.start()
        thread.join()
        assert got == [eng]
    finally:
        collective._process_engine = saved


def test_the_default_bound_exchange_swaps_buffers():
    """``Link.bind_sendrecv``: start sends and receives, finish is a no-op, repeatable."""
    world = LocalWorld(2)
    out = {}

    def rank(r):
        link = LocalLink(world, r)
        send, recv = np.full(4, r, np.int32), np.zeros(4, np.int32)
        start, finish = link.bind_sendrecv(1 - r, link.prepare(send), 1 - r, link.prepare(recv))
        got = []
        for it in range(3):
            send[:] = 10 * it + r
            start()
            finish()
            got.append(recv.copy())
        out[r] = got
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for r in range(2):
        assert [g.tolist() for g in out[r]] == [[10 * it + 1 - r] * 4 for it in range(3)]


def test_the_waiting_mode_setting_is_checked(monkeypatch):
    pytest.importorskip("mpi4py")
    from mxref.collective.mpi_engine import yield_wait_for
    for value, want in (("1", True), ("on", True), ("0", False), ("off", False)):
        monkeypatch.setenv("MXREF_COLLECTIVE_YIELD", value)
        assert yield_wait_for(None) is want
    monkeypatch.setenv("MXREF_COLLECTIVE_YIELD", "sometimes")
    with pytest.raises(MXNetError, match="MXREF_COLLECTIVE_YIELD"):
        yield_wait_for(None)
