"""The idle run (``IdleRunner``, both cores): push, run and complete in one call on an idle engine,
leaving every queue as it found it; the ordinary push whenever that is not the whole story; and the
immediate free of a dropped chunk whose variable is idle (``delete_storage``)."""
import threading
import time

import pytest
from engine_factory import make_engine, marked

import mxref as mx
from mxref import profiler, storage
from mxref.base import MXNetError
from mxref.engine.base import FnProperty

CPU = mx.cpu()


@pytest.fixture
def eng(inline_engine):
    return inline_engine


def test_an_idle_run_leaves_the_queues_as_it_found_them(eng):
    """Reads (one repeated, one also written) and writes: the op runs here, each written variable
    counts one write, and afterwards every variable is idle and nothing is pending."""
    r, w1, w2 = eng.new_variable(), eng.new_variable(), eng.new_variable()
    where = []
    before = eng._idle.runs
    eng.push_sync(marked(lambda rc: where.append((threading.get_ident(), rc.ctx))), CPU,
                  (r, r, w1), (w1, w2), name="op")
    assert where == [(threading.get_ident(), CPU)] and eng._idle.runs == before + 1
    assert (r.version, w1.version, w2.version) == (0, 1, 1)
    assert all(eng.core.idle(v) for v in (r, w1, w2)) and eng.num_pending() == 0
    eng.push_sync(marked(lambda rc: where.append(1)), CPU, [w1], [r])    # lists work as well
    assert where[-1] == 1 and r.version == 1 and eng._idle.runs == before + 2


@pytest.mark.parametrize("case", ["unmarked", "priority", "busy", "off", "profiling", "tainted",
                                  "same-write-twice", "many-vars", "gpu"])
def test_the_ordinary_push_takes_what_the_idle_run_must_not(eng, case, tmp_path):
    """Each case still runs the op (on the worker or through ``_run_here``), never by the idle run."""
    gate, ran = threading.Event(), []
    fn = (lambda rc: ran.append(1)) if case == "unmarked" else marked(lambda rc: ran.append(1))
    v = eng.new_variable()
    ctx, reads, writes, prop = CPU, (), (v,), FnProperty.NORMAL
    if case == "priority":
        prop = FnProperty.CPU_PRIORITIZED
    elif case == "busy":
        eng.push_sync(lambda rc: gate.wait(10), CPU, (), (eng.new_variable(),))
    elif case == "off":
        eng.run_inline = False
    elif case == "tainted":
        bad = eng.new_variable()
        eng.push_sync(lambda rc: 1 / 0, CPU, (), (bad,), name="failing")   # on the worker
    elif case == "same-write-twice":
        writes = (v, v)
    elif case == "many-vars":
        reads = tuple(eng.new_variable() for _ in range(9))
    elif case == "gpu":
        ctx = mx.gpu(0)
    before = eng._idle.runs
    if case == "profiling":
        profiler.set_config(profile_all=True, filename=str(tmp_path / "profile.json"))
        profiler.set_state("run")
    try:
        if case == "tainted":
            eng._drain()
        if case != "gpu":
            eng.push_sync(fn, ctx, reads, writes, prop)
        else:   # no GPU here: ask the runner alone, which must decline before touching anything
            assert eng._idle.run(fn, ctx, reads, writes, 0, "op") is False
            ran.append(1)
        gate.set()
        eng._drain()
    finally:
        if case == "profiling":
            profiler.set_state("stop")
            profiler._state.events.clear()
    assert ran == [1] and eng._idle.runs == before
    if case == "tainted":
        with pytest.raises(MXNetError, match="ZeroDivisionError"):
            eng.wait_for_all()


def test_an_op_pushed_from_inside_waits_for_the_idle_run_and_is_released_by_it(eng):
    """The running op pushes a reader of its own output: the reader queues (the engine is not idle
    any more), and the idle run's completion releases it to the worker."""
    out, other = eng.new_variable(), eng.new_variable()
    log = []

    def outer(rc):
        eng.push_sync(marked(lambda rc2: log.append(("inner", threading.get_ident()))), CPU,
                      (out,), (other,), name="inner")
        time.sleep(0.01)
        log.append(("outer", threading.get_ident()))
    eng.push_sync(marked(outer), CPU, (), (out,), name="outer")
    eng.wait_for_all()
    assert [name for name, _ in log] == ["outer", "inner"]
    assert log[0][1] == threading.get_ident() != log[1][1]
    assert out.version == other.version == 1 and eng.num_pending() == 0


def test_a_wait_on_another_thread_returns_when_the_idle_run_completes(eng):
    started, done = threading.Event(), []

    def slow(rc):
        started.set()
        time.sleep(0.05)
        done.append(1)
    waiter = threading.Thread(target=lambda: (started.wait(5), eng.wait_for_all(), done.append(2)))
    waiter.start()
    eng.push_sync(marked(slow), CPU, (), (eng.new_variable(),))
    waiter.join(5)
    assert not waiter.is_alive() and done == [1, 2]


def test_a_wait_inside_an_idle_run_is_refused(eng):
    v = eng.new_variable()
    eng.push_sync(marked(lambda rc: eng.wait_for_all()), CPU, (), (v,), name="waits")
    with pytest.raises(MXNetError, match="inside engine operation 'waits'"):
        eng.wait_for_var(v)
    eng.wait_for_all()


def test_the_idle_run_is_atomic_against_other_pushing_threads(eng):
    """Two threads push chains on shared variables: every op sees the previous value of its
    chain (no op of one thread overlaps a write of the other), whichever path each op took."""
    shared = [eng.new_variable() for _ in range(2)]
    box = [0, 0]

    def worker(k):
        for i in range(300):
            def bump(rc, j=i % 2):
                seen = box[j]
                box[j] = seen + 1
            eng.push_sync(marked(bump), CPU, (), (shared[i % 2],))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eng.wait_for_all()
    assert box == [300, 300] and [v.version for v in shared] == [300, 300]


# ------------------------------------------------------------------------------------------------
# delete_storage: a dropped chunk's memory
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["naive", "threaded-python", "threaded-cython"])
def test_delete_storage_frees_an_idle_variable_at_once(kind):
    e = make_engine(kind)
    try:
        v = e.new_variable()
        e.push_sync(lambda rc: None, CPU, (), (v,))
        e.wait_for_all()
        h = storage.alloc(100, CPU)
        e.delete_storage(h, CPU, v)
        assert h._pool == "freed" and v.deleted and v.version == 2
        w = e.new_variable()
        e.delete_storage(None, CPU, w)             # a chunk never written: nothing to give back
        assert w.deleted and w.version == 1
    finally:
        e.stop()


def test_delete_storage_of_a_busy_variable_waits_for_its_queued_uses(eng):
    gate, v = threading.Event(), eng.new_variable()
    h = storage.alloc(100, CPU)
    seen = []
    eng.push_sync(lambda rc: (gate.wait(10), seen.append(h._pool == "freed")), CPU, (v,), ())
    eng.delete_storage(h, CPU, v)
    assert h._pool != "freed" and not v.deleted
    gate.set()
    eng.wait_for_all()
    assert seen == [False] and h._pool == "freed" and v.deleted


@pytest.mark.parametrize("kind", ["naive", "threaded-python", "threaded-cython"])
def test_a_failing_free_is_stored_on_the_variable_as_run_delete_does(kind):
    e = make_engine(kind)
    try:
        v = e.new_variable()
        h = storage.alloc(100, CPU)
        storage.free(h)
        e.delete_storage(h, CPU, v)                # freed twice: the error travels with the data
        assert not v.deleted and v.version == 1
        with pytest.raises(MXNetError, match=r"double free.*\(in operator DeleteVariable\)"):
            e.wait_for_var(v)
        e.wait_for_all()
    finally:
        e.stop()
