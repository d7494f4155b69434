"""delete_variable: runs after every use already pushed, at once when there is none, on every engine
and core alike; failures travel like an op's; bulked uses count."""
import threading

import pytest
from engine_factory import queue_behind_a_blocker

from mxref.base import MXNetError
from mxref.context import cpu
from mxref.engine import FnProperty

CPU = cpu(0)


def test_deleting_an_idle_variable_runs_at_once_on_the_caller(engine):
    """Every use has completed: the delete function runs before delete_variable returns, on the
    calling thread, and counts as a write (version) that retires the variable."""
    v = engine.new_variable()
    engine.push_sync(lambda r: None, CPU, (), (v,))
    engine.wait_for_all()
    where = []
    engine.delete_variable(lambda r: where.append((threading.current_thread(), r.ctx)), CPU, v)
    assert where == [(threading.current_thread(), CPU)]
    assert v.deleted and v.version == 2 and engine.num_pending() == 0


def test_delete_waits_for_queued_uses_and_finishes_before_wait_for_all(threaded):
    """Queued write and reads on the variable: the delete runs after the last of them (never
    while one is pending), and wait_for_all returns only once it has run."""
    eng = threaded
    v, gate, log = eng.new_variable(), threading.Event(), []
    eng.push_sync(lambda r: (gate.wait(10), log.append("w")), CPU, (), (v,))
    for i in range(3):
        eng.push_sync(lambda r, i=i: log.append(f"r{i}"), CPU, (v,), ())
    eng.delete_variable(lambda r: log.append("delete"), CPU, v)
    assert log == [] and not v.deleted
    gate.set()
    eng.wait_for_all()
    assert log[0] == "w" and sorted(log[1:4]) == ["r0", "r1", "r2"] and log[4:] == ["delete"]
    assert v.deleted and v.version == 2


def test_a_failing_delete_is_raised_at_the_next_wait(engine):
    """An exception in the delete function is stored like an op's and raised once, by name."""
    v = engine.new_variable()

    def bad(rctx):
        raise ValueError("cannot free")

    engine.delete_variable(bad, CPU, v)
    with pytest.raises(MXNetError, match="DeleteVariable failed: ValueError: cannot free"):
        engine.wait_for_all()
    assert not v.deleted
    engine.wait_for_all()


def test_delete_runs_even_when_the_variable_carries_an_error(engine):
    """DELETE_VAR is skip-exempt: the memory is freed though the last write failed."""
    v, freed = engine.new_variable(), []

    def fail(rctx):
        raise RuntimeError("write failed")

    engine.push_sync(fail, CPU, (), (v,), name="failing_write")
    engine.delete_variable(lambda r: freed.append(True), CPU, v)
    with pytest.raises(MXNetError, match="failing_write"):
        engine.wait_for_all()
    assert freed == [True] and v.deleted


def test_delete_follows_bulked_uses(engine):
    """Uses still collected in this thread's bulk are pushed before the delete is decided."""
    v, log = engine.new_variable(), []
    old = engine.set_bulk_size(8)
    try:
        engine.push_sync(lambda r: log.append("w"), CPU, (), (v,))
        engine.push_sync(lambda r: log.append("r"), CPU, (v,), ())
        engine.delete_variable(lambda r: log.append("delete"), CPU, v)
    finally:
        engine.set_bulk_size(old)
    engine.wait_for_all()
    assert log == ["w", "r", "delete"]


def test_delete_of_a_foreign_variable_is_refused(threaded):
    """A variable of another engine type cannot be deleted here (as it cannot be pushed on)."""
    from mxref.engine.naive import NaiveVar
    with pytest.raises(MXNetError, match="not a variable of the threaded engine"):
        threaded.delete_variable(lambda r: None, CPU, NaiveVar())


@pytest.mark.parametrize("kind", ["threaded-python", "threaded-cython"])
def test_a_pushed_delete_var_op_jumps_the_fifo_queue(make, kind):
    """An explicitly pushed DELETE_VAR op released by a worker goes to the front of the FIFO queue."""
    eng = make(kind, cpu_worker_nthreads=1)
    log = []
    gate, d = queue_behind_a_blocker(eng, CPU, log)
    eng.push_sync(lambda r: log.append("free"), CPU, (), (d,), FnProperty.DELETE_VAR)
    gate.set()
    eng.wait_for_all()
    assert log == ["w", "free", "n0", "n1", "n2"]
