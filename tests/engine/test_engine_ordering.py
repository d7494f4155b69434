"""Engine ordering: read-after-write, write-after-read, write-after-write, concurrent reads, views
sharing a variable, priorities, DELETE_VAR jumping the queue, async completion and routing."""
import threading
import time

import numpy as np
import pytest
from engine_factory import queue_behind_a_blocker

import mxref as mx
from mxref.engine.base import FnProperty

CPU = mx.cpu()


def test_read_after_write_sees_the_write(engine):
    """A read pushed after a (slow) write runs after it and sees its value."""
    x = engine.new_variable()
    box, seen = {"x": 0}, []

    def write(rctx):
        time.sleep(0.02)
        box["x"] = 42
    engine.push_sync(write, CPU, (), (x,))
    engine.push_sync(lambda rctx: seen.append(box["x"]), CPU, (x,), ())
    engine.wait_for_all()
    assert seen == [42]


def test_write_after_read_waits_for_the_read(engine):
    """A write pushed after a (slow) read does not overwrite the value before the read used it."""
    x = engine.new_variable()
    box, seen = {"x": 1}, []

    def read(rctx):
        time.sleep(0.02)
        seen.append(box["x"])
    engine.push_sync(read, CPU, (x,), ())
    engine.push_sync(lambda rctx: box.__setitem__("x", 2), CPU, (), (x,))
    engine.wait_for_var(x)
    assert seen == [1] and box["x"] == 2


def test_write_after_write_keeps_push_order(engine):
    """Writes to one variable run one at a time, in push order, whatever their durations."""
    x = engine.new_variable()
    log = []
    for i, delay in enumerate([0.02, 0.0, 0.01, 0.0]):
        def write(rctx, i=i, delay=delay):
            time.sleep(delay)
            log.append(i)
        engine.push_sync(write, CPU, (), (x,))
    engine.wait_for_var(x)
    assert log == [0, 1, 2, 3]
    assert x.version == 4


def test_reads_between_writes_run_concurrently(threaded):
    """Two reads of one variable overlap (both must reach a 2-party barrier), then the next write runs."""
    x = engine_var = threaded.new_variable()
    barrier = threading.Barrier(2, timeout=10)
    log = []

    def read(rctx, i):
        barrier.wait()          # raises BrokenBarrierError unless both reads run at the same time
        log.append(f"read{i}")
    threaded.push_sync(lambda r: log.append("w0"), CPU, (), (engine_var,))
    threaded.push_sync(lambda r: read(r, 0), CPU, (x,), ())
    threaded.push_sync(lambda r: read(r, 1), CPU, (x,), ())
    threaded.push_sync(lambda r: log.append("w1"), CPU, (), (x,))
    threaded.wait_for_all()
    assert log[0] == "w0" and sorted(log[1:3]) == ["read0", "read1"] and log[3] == "w1"


def test_views_sharing_a_variable_are_ordered(engine):
    """Overlapping views of one buffer share one variable, so writes through one view are ordered
    with reads through another, as NDArray slices are."""
    buf = np.zeros(10)
    var = engine.new_variable()          # one variable for the buffer and every view of it
    a, b = buf[0:6], buf[4:10]
    out = []

    def slow_fill(rctx):
        time.sleep(0.02)
        a[:] = 1.0
    engine.push_sync(slow_fill, CPU, (), (var,))
    engine.push_sync(lambda r: out.append(b.copy()), CPU, (var,), ())
    engine.push_sync(lambda r: b.__setitem__(slice(None), 2.0), CPU, (), (var,))
    engine.wait_for_var(var)
    np.testing.assert_array_equal(out[0], [1, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(buf, [1, 1, 1, 1, 2, 2, 2, 2, 2, 2])


def test_same_var_read_and_written_is_a_write(engine):
    """A var listed as both input and output counts once, as a write (no self-deadlock)."""
    x = engine.new_variable()
    box = {"x": 1}
    engine.push_sync(lambda r: box.__setitem__("x", box["x"] + 1), CPU, (x, x), (x, x))
    engine.wait_for_var(x)
    assert box["x"] == 2 and x.version == 1


def test_cpu_prioritized_pops_highest_priority_first(make):
    """The priority queue runs higher priorities first, equal priorities in push order."""
    eng = make("threaded-python", cpu_priority_nthreads=1)
    _priority_order(eng)


def test_cpu_prioritized_order_cython_core(make):
    """Same as above with the Cython priority queue."""
    eng = make("threaded-cython", cpu_priority_nthreads=1)
    _priority_order(eng)


def _priority_order(eng):
    gate, order = threading.Event(), []
    eng.push_sync(lambda r: gate.wait(10), CPU, (), (eng.new_variable(),), FnProperty.CPU_PRIORITIZED)
    time.sleep(0.05)            # the single priority thread is now blocked in the gate op
    for tag, prio in [("a", 1), ("b", 5), ("c", 3), ("d", 5), ("e", -2)]:
        eng.push_sync(lambda r, tag=tag: order.append(tag), CPU, (), (eng.new_variable(),),
                      FnProperty.CPU_PRIORITIZED, prio)
    gate.set()
    eng.wait_for_all()
    assert order == ["b", "d", "c", "a", "e"]


@pytest.mark.parametrize("kind", ["threaded-python", "threaded-cython"])
def test_delete_variable_runs_before_queued_ops(make, kind):
    """A deletion released by a worker's completion runs before the ops already queued."""
    eng = make(kind, cpu_worker_nthreads=1)
    log = []
    gate, d = queue_behind_a_blocker(eng, CPU, log)
    eng.delete_variable(lambda r: log.append("delete"), CPU, d)
    gate.set()
    eng.wait_for_all()
    assert log == ["w", "delete", "n0", "n1", "n2"]
    assert d.deleted


def test_async_op_pushed_ready_runs_inline_on_pusher(threaded):
    """An ASYNC op that is ready at push runs on the pushing thread (MXNet's rule)."""
    where = []
    threaded.push_async(lambda r, done: (where.append(threading.current_thread()), done()), CPU,
                        (), (threaded.new_variable(),), FnProperty.ASYNC)
    threaded.wait_for_all()
    assert where == [threading.current_thread()]


def test_async_completion_from_another_thread(engine):
    """``on_complete`` may be called later from another thread; readers wait for it."""
    x = engine.new_variable()
    box, seen = {"x": 0}, []

    def start(rctx, on_complete):
        def later():
            time.sleep(0.02)
            box["x"] = 7
            on_complete()
        t = threading.Thread(target=later)
        t.start()
        if type(engine).__name__ == "NaiveEngine":
            t.join()          # the naive engine requires completion before the function returns
    engine.push_async(start, CPU, (), (x,))
    engine.push_sync(lambda r: seen.append(box["x"]), CPU, (x,), ())
    engine.wait_for_all()
    assert seen == [7]


def test_worker_threads_per_context_and_priority(threaded):
    """cpu(i) ops run on "cpu(i) worker" threads; CPU_PRIORITIZED ops on "cpu priority" threads."""
    names = {}
    for key, ctx, prop in [("c0", mx.cpu(0), FnProperty.NORMAL), ("c1", mx.cpu(1), FnProperty.NORMAL),
                           ("p", mx.cpu(0), FnProperty.CPU_PRIORITIZED)]:
        threaded.push_sync(lambda r, key=key: names.__setitem__(key, threading.current_thread().name),
                           ctx, (), (threaded.new_variable(),), prop)
    threaded.wait_for_all()
    assert names["c0"].startswith("cpu(0) worker ")
    assert names["c1"].startswith("cpu(1) worker ")
    assert names["p"].startswith("cpu priority ")
    assert {"cpu(0) worker", "cpu(1) worker", "cpu priority"} <= set(threaded.describe()["groups"])


def test_ops_pushed_from_inside_an_op(engine):
    """A running op may push more ops (kvstore callbacks do); they are ordered as usual."""
    x = engine.new_variable()
    log = []

    def outer(rctx):
        engine.push_sync(lambda r: log.append("inner"), CPU, (), (x,))
        log.append("outer")
    engine.push_sync(outer, CPU, (), (engine.new_variable(),))
    engine.wait_for_all()
    assert sorted(log) == ["inner", "outer"]


def test_wait_for_var_only_waits_for_that_var(threaded):
    """wait_for_var(x) returns while an unrelated op is still running."""
    x, y = threaded.new_variable(), threaded.new_variable()
    gate = threading.Event()
    threaded.push_sync(lambda r: gate.wait(10), CPU, (), (y,))
    threaded.push_sync(lambda r: None, CPU, (), (x,))
    threaded.wait_for_var(x)
    assert threaded.num_pending() >= 1
    gate.set()
    threaded.wait_for_all()
    assert threaded.num_pending() == 0


def test_stop_drains_and_engine_restarts(threaded):
    """stop() finishes pending work and joins threads; a later push starts new workers."""
    x, log = threaded.new_variable(), []
    for i in range(20):
        threaded.push_sync(lambda r, i=i: log.append(i), CPU, (), (x,))
    threaded.stop()
    assert log == list(range(20)) and threaded.describe()["groups"] == []
    threaded.push_sync(lambda r: log.append("again"), CPU, (), (x,))
    threaded.wait_for_var(x)
    assert log[-1] == "again"


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_engine_works_in_forked_child(threaded):
    """A forked child (e.g. a data-loader worker) gets fresh workers instead of the parent's dead ones."""
    import os
    x = threaded.new_variable()
    threaded.push_sync(lambda r: None, CPU, (), (x,))
    threaded.wait_for_all()
    pid = os.fork()
    if pid == 0:                                    # child: run one op and report through the exit code
        code = 1
        try:
            box = []
            threaded.push_sync(lambda r: box.append(threading.current_thread().name), CPU, (), (x,))
            threaded.wait_for_var(x)
            code = 0 if box and box[0].startswith("cpu(0) worker") else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_finished_op_is_released_by_idle_worker(threaded):
    """An idle worker keeps no reference to the last op it ran, so its arrays can be freed."""
    import gc
    import weakref

    class Payload:
        pass
    payload = Payload()
    ref = weakref.ref(payload)
    x = threaded.new_variable()
    threaded.push_sync(lambda r, p=payload: None, CPU, (), (x,))
    del payload
    threaded.wait_for_all()
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("kind", ["threaded-python", "threaded-cython"])
def test_gpu_ops_route_to_gpu_groups_with_streams(make, kind, monkeypatch):
    """gpu(i) ops run on "gpu(i) worker" threads, copies on "gpu(i) copy", GPU_PRIORITIZED on
    "gpu(i) priority"; each GPU thread gets run_ctx.stream from the backend's gpu_thread_init hook.
    (The engine itself never touches CUDA, so this runs without a GPU.)"""
    from mxref.engine import threaded
    monkeypatch.setattr(threaded, "_gpu_thread_init", None)
    threaded.set_gpu_thread_init(lambda dev, thread: f"stream<{thread}>")
    eng = make(kind)
    seen = {}
    for key, prop in [("compute", FnProperty.NORMAL), ("copy", FnProperty.COPY_TO_GPU),
                      ("prio", FnProperty.GPU_PRIORITIZED)]:
        eng.push_sync(lambda r, key=key: seen.__setitem__(key, (threading.current_thread().name, r.stream)),
                      mx.gpu(1), (), (eng.new_variable(),), prop)
    eng.wait_for_all()
    assert seen["compute"][0].startswith("gpu(1) worker ")
    assert seen["copy"][0].startswith("gpu(1) copy ")
    assert seen["prio"][0].startswith("gpu(1) priority ")
    assert all(stream == f"stream<{name}>" for name, stream in seen.values())
