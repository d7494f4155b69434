"""Profiler: configuration and state checks, engine ops recorded as Chrome-trace spans on named worker
threads, the aggregate table (table/json, sorting, reset), pause/resume, user annotations."""
import json
import threading
import time

import pytest

import mxref as mx
from mxref import profiler
from mxref.base import MXNetError
from mxref.engine.threaded import ThreadedEnginePerDevice

CPU = mx.cpu()


@pytest.fixture
def prof(tmp_path):
    """A clean profiler writing into tmp_path; stopped and emptied afterwards."""
    profiler._state.events.clear()
    profiler.set_config(profile_all=True, filename=str(tmp_path / "profile.json"))
    yield tmp_path / "profile.json"
    profiler.set_state("stop")
    profiler.resume()
    profiler._state.events.clear()


@pytest.fixture
def eng():
    e = ThreadedEnginePerDevice(use_ext=False, cpu_worker_nthreads=2)
    yield e
    e.stop()


def _sleep_op(seconds):
    return lambda rctx: time.sleep(seconds)


def test_bad_config_and_state_raise():
    """Unknown set_config arguments and unknown states raise MXNetError naming them."""
    with pytest.raises(MXNetError, match="bogus"):
        profiler.set_config(bogus=1)
    with pytest.raises(MXNetError, match="'run' or 'stop'"):
        profiler.set_state("go")
    with pytest.raises(MXNetError, match="sort_by"):
        profiler.dumps(sort_by="median")


def test_trace_has_one_span_per_op_on_named_worker_threads(prof, eng):
    """dump() writes {"traceEvents": [...]} with an "X" span per op and thread-name metadata;
    two independent ops overlap in time on two different worker threads."""
    profiler.set_state("run")
    assert profiler.state() == "run"
    eng.push_sync(_sleep_op(0.1), CPU, (), (eng.new_variable(),), name="left")
    eng.push_sync(_sleep_op(0.1), CPU, (), (eng.new_variable(),), name="right")
    eng.wait_for_all()
    profiler.set_state("stop")
    profiler.dump()
    trace = json.loads(prof.read_text())
    spans = {e["name"]: e for e in trace["traceEvents"] if e["ph"] == "X"}
    assert {"left", "right"} <= set(spans)
    left, right = spans["left"], spans["right"]
    assert left["dur"] >= 80_000 and left["tid"] != right["tid"]                 # microseconds
    assert left["ts"] < right["ts"] + right["dur"] and right["ts"] < left["ts"] + left["dur"]
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert {"cpu(0) worker 0", "cpu(0) worker 1"} <= names
    procs = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert "cpu(0)" in procs


def test_nothing_recorded_when_stopped_or_paused(prof, eng):
    """No events while stopped or paused; recording resumes after resume()."""
    eng.push_sync(lambda r: None, CPU, (), (eng.new_variable(),), name="before")
    profiler.set_state("run")
    profiler.pause()
    eng.push_sync(lambda r: None, CPU, (), (eng.new_variable(),), name="paused")
    eng.wait_for_all()
    profiler.resume()
    eng.push_sync(lambda r: None, CPU, (), (eng.new_variable(),), name="resumed")
    eng.wait_for_all()
    profiler.set_state("stop")
    eng.push_sync(lambda r: None, CPU, (), (eng.new_variable(),), name="after")
    eng.wait_for_all()
    assert [e[1] for e in profiler._state.events] == ["resumed"]


def test_dumps_table_json_sort_and_reset(prof, eng):
    """dumps() aggregates count/total/min/max/avg per op; json has the same numbers; reset clears."""
    profiler.set_state("run")
    x = eng.new_variable()
    for _ in range(3):
        eng.push_sync(_sleep_op(0.002), CPU, (), (x,), name="slow_op")
    eng.push_sync(lambda r: None, CPU, (), (x,), name="fast_op")
    eng.wait_for_all()
    profiler.set_state("stop")
    table = profiler.dumps()
    assert "operator" in table and "Total Count" in table
    row = next(line for line in table.splitlines() if line.startswith("slow_op"))
    assert row.split()[1] == "3" and float(row.split()[2]) >= 6.0
    assert table.index("slow_op") < table.index("fast_op")                # sorted by total, descending
    asc = profiler.dumps(sort_by="count", ascending=True)
    assert asc.index("fast_op") < asc.index("slow_op")
    stats = json.loads(profiler.dumps(format="json"))
    slow = stats["Time"]["operator"]["slow_op"]
    assert slow["Count"] == 3 and slow["Min"] <= slow["Avg"] <= slow["Max"]
    assert stats["Unit"]["Time"] == "ms"
    profiler.dumps(reset=True)
    assert "slow_op" not in profiler.dumps()


def test_user_annotations(prof):
    """Domain tasks, frames and events are spans; markers are instants; counters are values."""
    profiler.set_state("run")
    dom = profiler.Domain("train")
    with dom.new_task("epoch"):
        time.sleep(0.001)
    frame = dom.new_frame("step")
    frame.start()
    frame.stop()
    dom.new_marker("checkpoint").mark()
    counter = dom.new_counter("batches", 1)
    counter += 2
    profiler.set_state("stop")
    profiler.dump()
    events = json.loads(prof.read_text())["traceEvents"]
    kinds = {(e["name"], e["ph"]) for e in events if e["ph"] != "M"}
    assert {("epoch", "X"), ("step", "X"), ("checkpoint", "i"), ("batches", "C")} <= kinds
    assert [e["args"]["batches"] for e in events if e["name"] == "batches"] == [1, 3]
    assert counter.value == 3
    with pytest.raises(MXNetError, match="stopped before it was started"):
        profiler.Event("never").stop()


def test_dump_finished_stops_recording(prof):
    """dump(finished=True) writes the file and leaves the 'run' state."""
    profiler.set_state("run")
    profiler.dump(finished=True)
    assert profiler.state() == "stop" and prof.exists()


def test_continuous_dump_writes_periodically(prof):
    """continuous_dump with dump_period rewrites the trace file while running."""
    profiler.set_config(continuous_dump=True, dump_period=0.02)
    try:
        profiler.set_state("run")
        deadline = time.time() + 5
        while not prof.exists() and time.time() < deadline:
            time.sleep(0.01)
        assert prof.exists()
    finally:
        profiler.set_state("stop")
        profiler.set_config(continuous_dump=False)
        for t in threading.enumerate():
            if t.name == "profiler dump":
                t.join(2)


def test_autostart_profiles_whole_run_and_dumps_at_exit(tmp_path):
    """MXNET_PROFILER_AUTOSTART=1 records from import and writes profile.json at exit, after the
    engine drained (an op still running at exit is in the trace)."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import time, mxref as mx\n"
            "e = mx.engine.get()\n"
            "e.push_sync(lambda r: time.sleep(0.05), mx.cpu(), (), (e.new_variable(),), name='late_op')\n")
    env = dict(os.environ, MXNET_PROFILER_AUTOSTART="1", PYTHONPATH=root)
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, timeout=120)
    trace = json.loads((tmp_path / "profile.json").read_text())
    assert "late_op" in [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"]


def test_run_ends_a_pause(prof, eng):
    """set_state('run') also ends an earlier pause() (MXNet's Profiler::SetState)."""
    profiler.set_state("run")
    profiler.pause()
    profiler.set_state("stop")
    profiler.set_state("run")
    eng.push_sync(lambda r: None, CPU, (), (eng.new_variable(),), name="after_run")
    eng.wait_for_all()
    assert "after_run" in [e[1] for e in profiler._state.events]


def test_memory_section_from_storage_pools(prof):
    """With profile_memory, each pool allocation and free is a 'Memory: cpu/0' sample in the
    'Device Storage' table: json "Memory" rows have Count/Min/Max/Avg in kB (no Total)."""
    profiler.set_config(profile_memory=True)
    profiler.set_state("run")
    a = mx.nd.ones((256, 256))    # 256 kB
    a.wait_to_read()
    del a
    mx.nd.waitall()
    profiler.set_state("stop")
    stats = json.loads(profiler.dumps(format="json"))
    assert stats["Unit"] == {"Time": "ms", "Memory": "kB"}
    row = stats["Memory"]["Device Storage"]["Memory: cpu/0"]
    assert set(row) == {"Count", "Min", "Max", "Avg"} and row["Count"] >= 2
    assert row["Max"] >= 256 and row["Min"] <= row["Avg"] <= row["Max"]
    assert "Max Use  (kB)" in profiler.dumps()
    for key in ("count", "min", "max", "avg"):
        ordered = json.loads(profiler.dumps(format="json", sort_by=key, ascending=True))
        assert list(ordered["Memory"]["Device Storage"]) == ["Memory: cpu/0"]
    profiler.set_config(profile_memory=False)
    profiler.dumps(reset=True)
    profiler.set_state("run")
    mx.nd.ones((8,)).wait_to_read()
    profiler.set_state("stop")
    assert json.loads(profiler.dumps(format="json"))["Memory"] == {}


def test_custom_operator_work_is_attributed(prof):
    """A custom operator's Python is '<op>::pure_python' and the operators it runs '<op>::<name>',
    in the 'Custom Operator' category; its backward is '_backward_<op>::...'."""
    class Twice(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] + 0)

    @mx.operator.register("ProfTwice")
    class TwiceProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Twice()

    profiler.set_state("run")
    x = mx.nd.ones((3,))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="ProfTwice")
    y.backward()
    mx.nd.waitall()
    profiler.set_state("stop")
    custom = json.loads(profiler.dumps(format="json"))["Time"]["Custom Operator"]
    assert {"ProfTwice::pure_python", "ProfTwice::_mul_scalar", "_backward_ProfTwice::pure_python",
            "_backward_ProfTwice::_plus_scalar"} <= set(custom)


def test_dump_renders_only_new_events(prof):
    """Repeated dumps reuse the text of events already rendered; the file stays valid JSON and a
    cleared event list starts a fresh rendering."""
    profiler.set_state("run")
    counter = profiler.Counter(profiler.Domain("d"), "c")
    for i in range(50):
        counter.set_value(i)
    profiler.dump(False)
    first = json.loads(prof.read_text())["traceEvents"]
    for i in range(50):
        counter.set_value(i)
    profiler.dump(False)
    second = json.loads(prof.read_text())["traceEvents"]
    assert len([e for e in second if e["ph"] == "C"]) == 100
    assert first == second[:len(first)] or len(second) > len(first)
    profiler._state.events.clear()
    counter.set_value(1)
    profiler.dump(True)
    assert len([e for e in json.loads(prof.read_text())["traceEvents"] if e["ph"] == "C"]) == 1


def test_dump_replaces_the_file_whole(prof):
    """dump writes aside and renames: no temporary file is left, the file is valid JSON."""
    profiler.set_state("run")
    mx.nd.ones((2,)).wait_to_read()
    profiler.dump(False)
    profiler.dump(True)
    assert json.loads(prof.read_text())["traceEvents"]
    assert [p.name for p in prof.parent.iterdir()] == [prof.name]
