"""Running on the calling thread: an op marked ``may_run_inline`` runs on the pushing thread when
nothing else is pending, is queued otherwise, and either way gives the naive engine's values and
errors (random DAGs with slow ops that make others queue, both cores)."""
import gc
import random
import threading
import time
import weakref
import zlib

import pytest
from engine_factory import make_engine, marked

import mxref as mx
from mxref import profiler
from mxref.base import MXNetError
from mxref.engine.base import FnProperty
from mxref.engine.threaded import ThreadedEnginePerDevice

CPU = mx.cpu()


def test_idle_engine_runs_a_marked_op_on_the_calling_thread(inline_engine):
    where = []
    v = inline_engine.new_variable()
    inline_engine.push_sync(marked(lambda r: where.append(threading.get_ident())), CPU, (), (v,))
    assert where == [threading.get_ident()]          # done before the push returned
    assert inline_engine.num_pending() == 0 and v.version == 1


@pytest.mark.parametrize("case", ["unmarked", "priority", "async-prop", "busy", "off", "profiling"])
def test_when_the_op_is_handed_to_a_worker(inline_engine, case, tmp_path):
    where, gate = [], threading.Event()
    fn = (lambda r: where.append(threading.get_ident()))
    prop = FnProperty.CPU_PRIORITIZED if case == "priority" else FnProperty.NORMAL
    if case != "unmarked":
        marked(fn)
    if case == "busy":      # an unrelated op occupies the worker: pending > 0
        inline_engine.push_sync(lambda r: gate.wait(10), CPU, (), (inline_engine.new_variable(),))
    if case == "off":
        inline_engine.run_inline = False
    v = inline_engine.new_variable()
    if case == "profiling":
        profiler.set_config(profile_all=True, filename=str(tmp_path / "profile.json"))
        profiler.set_state("run")
    try:
        if case == "async-prop":
            inline_engine.push_async(marked(lambda r, done: (where.append(threading.get_ident()), done())),
                                     CPU, (), (v,), FnProperty.CPU_PRIORITIZED)
        else:
            inline_engine.push_sync(fn, CPU, (), (v,), prop)
        gate.set()
        inline_engine.wait_for_all()
    finally:
        if case == "profiling":
            profiler.set_state("stop")
            profiler._state.events.clear()
    assert len(where) == 1 and where[0] != threading.get_ident()


def test_an_inline_error_is_stored_and_raised_at_the_wait_as_a_queued_one(inline_engine):
    def fail(rctx):
        raise ValueError("bad kernel")
    out, later = inline_engine.new_variable(), inline_engine.new_variable()
    inline_engine.push_sync(marked(fail), CPU, (), (out,), name="failing")   # does not raise here
    ran = []
    inline_engine.push_sync(marked(lambda r: ran.append(1)), CPU, (out,), (later,), name="reader")
    assert ran == []                                 # skipped: it reads a failed variable
    for var in (out, later):
        with pytest.raises(MXNetError, match="operator failing failed: ValueError: bad kernel") as info:
            inline_engine.wait_for_var(var)
        assert isinstance(info.value.__cause__, ValueError)
        assert "in fail" in str(info.value) and "raise ValueError" in str(info.value)  # original traceback
    inline_engine.wait_for_all()                     # already reported by the waits above


def test_a_stored_inline_error_keeps_no_caller_frames_alive(inline_engine):
    """The error stays on the output as text and exception, but not the caller's locals."""
    class Payload:
        pass
    out = inline_engine.new_variable()

    def caller(payload):
        def fail(rctx):
            raise ValueError("bad kernel")
        inline_engine.push_sync(marked(fail), CPU, (), (out,), name="failing")
    payload = Payload()
    ref = weakref.ref(payload)
    caller(payload)
    del payload
    gc.collect()
    assert ref() is None
    with pytest.raises(MXNetError, match="bad kernel") as info:
        inline_engine.wait_for_var(out)
    assert "raise ValueError" in str(info.value)
    inline_engine.wait_for_all()


def test_a_keyboard_interrupt_inside_an_inline_op_propagates_at_once(inline_engine):
    def interrupted(rctx):
        raise KeyboardInterrupt
    out = inline_engine.new_variable()
    with pytest.raises(KeyboardInterrupt):
        inline_engine.push_sync(marked(interrupted), CPU, (), (out,), name="ctrl_c")
    with pytest.raises(MXNetError, match="ctrl_c"):  # its output carries it, as on the naive engine
        inline_engine.wait_for_var(out)
    inline_engine.wait_for_all()


def test_env_var_switches_it(monkeypatch):
    monkeypatch.setenv("MXREF_ENGINE_RUN_INLINE", "0")
    eng = ThreadedEnginePerDevice(use_ext=False)
    assert eng.run_inline is False
    monkeypatch.delenv("MXREF_ENGINE_RUN_INLINE")
    assert ThreadedEnginePerDevice(use_ext=False).run_inline is True


# ------------------------------------------------------------------------------------------------
# Random DAGs: inline vs handed off vs naive
# ------------------------------------------------------------------------------------------------

NVARS = 5


def random_program(seed):
    rng = random.Random(seed)
    return [{"reads": rng.sample(range(NVARS), rng.randint(0, 2)),
             "writes": rng.sample(range(NVARS), rng.randint(1, 2)),
             "slow": rng.random() < 0.15, "fails": rng.random() < 0.05,
             "pause": rng.random() < 0.2} for _ in range(40)]


def run_program(eng, ops):
    """Push every op, sometimes pausing so the engine drains; return the values and what each wait
    raised. Slow ops are not marked (they go to the worker and take a while there), so the ops
    pushed behind them find the engine busy and queue; the others are eligible to run inline."""
    vals = list(range(NVARS))
    vs = [eng.new_variable() for _ in range(NVARS)]
    inline = []
    for i, op in enumerate(ops):
        def compute(rctx, i=i, op=op):
            inline.append(threading.current_thread() is threading.main_thread())
            if op["slow"]:
                time.sleep(0.003)        # long enough for the next pushes to queue behind it
            if op["fails"]:
                raise ValueError(f"op{i} failed")
            inputs = tuple(vals[r] for r in op["reads"] if r not in op["writes"])
            for w in op["writes"]:
                vals[w] = zlib.crc32(repr((i, inputs, vals[w])).encode())
        eng.push_sync(compute if op["slow"] else marked(compute), CPU, [vs[r] for r in op["reads"]],
                      [vs[w] for w in op["writes"]], name=f"op{i}")
        if op["pause"] and eng.name != "NaiveEngine":
            eng.wait_for_all() if not any(o["fails"] for o in ops[:i + 1]) else time.sleep(0.005)
    outcome = []
    for v in vs:
        try:
            eng.wait_for_var(v)
            outcome.append("ok")
        except MXNetError as exc:
            outcome.append(str(exc).split(" failed:")[0])
    try:
        eng.wait_for_all()
    except MXNetError:
        pass
    return vals, outcome, inline


@pytest.mark.parametrize("core", ["threaded-python", "threaded-cython"])
def test_random_dags_give_the_naive_engines_results(core):
    naive = make_engine("naive")
    engines = {"inline": make_engine(core, cpu_worker_nthreads=1, run_inline=True),
               "handoff": make_engine(core, cpu_worker_nthreads=1, run_inline=False)}
    ran_inline = ran_queued = 0
    try:
        for seed in range(25):
            ops = random_program(seed)
            want_vals, want_outcome, _ = run_program(naive, ops)
            for mode, eng in engines.items():
                vals, outcome, inline = run_program(eng, ops)
                assert (vals, outcome) == (want_vals, want_outcome), (mode, seed)
                if mode == "handoff":
                    assert not any(inline)
                else:
                    ran_inline += sum(inline)
                    ran_queued += len(inline) - sum(inline)
    finally:
        for eng in engines.values():
            eng.stop()
    assert ran_inline > 50 and ran_queued > 50       # both paths were really taken
