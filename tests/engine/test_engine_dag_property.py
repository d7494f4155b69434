"""Random DAGs of reads and writes give the same values (and the same errors) on the threaded engine,
with either core, bulked or not, as on the naive engine, which runs each op at push time."""
import threading
import time
import zlib

import pytest
from engine_factory import make_engine
from hypothesis import given, settings
from hypothesis import strategies as st

import mxref as mx
from mxref.base import MXNetError
from mxref.engine.base import FnProperty

NVARS = 6
PROPS = [FnProperty.NORMAL, FnProperty.NORMAL, FnProperty.CPU_PRIORITIZED, FnProperty.ASYNC]

op_strategy = st.fixed_dictionaries({
    "reads": st.sets(st.integers(0, NVARS - 1), max_size=3),
    "writes": st.sets(st.integers(0, NVARS - 1), min_size=1, max_size=2),
    "dev": st.integers(0, 1),
    "prop": st.sampled_from(PROPS),
    "priority": st.integers(-3, 3),
    "sleep": st.sampled_from([0, 0, 0, 1]),
    "fails": st.sampled_from([False] * 9 + [True]),
})


def _mix(op_id, inputs, old):
    """A deterministic function of what the op reads: any ordering mistake changes the result."""
    return zlib.crc32(repr((op_id, inputs, old)).encode())


def run_program(eng, ops, bulk_size=0):
    """Push every op, then wait on each variable in order; return values and raised errors."""
    vals = [v * 1000 for v in range(NVARS)]
    vs = [eng.new_variable() for _ in range(NVARS)]
    deferred = eng.name != "NaiveEngine"
    old_bulk = eng.set_bulk_size(bulk_size)
    try:
        for i, op in enumerate(ops):
            reads, writes = sorted(op["reads"]), sorted(op["writes"])

            def compute(i=i, reads=reads, writes=writes, op=op):
                if op["sleep"]:
                    time.sleep(0.0005)
                if op["fails"]:
                    raise ValueError(f"op{i} failed")
                inputs = tuple(vals[r] for r in reads if r not in writes)
                for w in writes:
                    vals[w] = _mix(i, inputs, vals[w])
            ctx = mx.cpu(op["dev"])
            const = [vs[r] for r in reads]
            mut = [vs[w] for w in writes]
            if op["prop"] == FnProperty.ASYNC:
                def fn(rctx, done, compute=compute):
                    def finish():
                        try:
                            compute()
                        except ValueError as exc:
                            done(exc)
                        else:
                            done()
                    if deferred:
                        threading.Thread(target=finish).start()
                    else:
                        finish()
                eng.push_async(fn, ctx, const, mut, op["prop"], op["priority"], name=f"op{i}")
            else:
                eng.push_sync(lambda rctx, c=compute: c(), ctx, const, mut, op["prop"], op["priority"],
                              name=f"op{i}")
    finally:
        eng.set_bulk_size(old_bulk)
    outcome = []
    for v in vs:
        try:
            eng.wait_for_var(v)
            outcome.append(("ok",))
        except MXNetError as exc:
            outcome.append(("error", str(exc).split(" failed:")[0].split(" (in")[0]))
    try:
        eng.wait_for_all()
        outcome.append("clean")
    except MXNetError:
        outcome.append("raised")
    return vals, outcome


@pytest.fixture(scope="module")
def engines():
    made = {kind: make_engine(kind) for kind in ("naive", "threaded-python", "threaded-cython")
            if kind != "threaded-cython" or _has_cython()}
    yield made
    for eng in made.values():
        eng.stop()


def _has_cython():
    try:
        from mxref._ext import engine_core  # noqa: F401
        return True
    except ImportError:
        return False


@given(ops=st.lists(op_strategy, min_size=1, max_size=30), bulk=st.sampled_from([0, 0, 4]))
@settings(max_examples=40, deadline=None)
def test_threaded_equals_naive_on_random_dags(engines, ops, bulk):
    """Every threaded configuration ends with the naive engine's values and error outcomes."""
    expected = run_program(engines["naive"], ops)
    for kind, eng in engines.items():
        if kind == "naive":
            continue
        # NOTE: a failure inside a bulk fails the whole bulk (bulk.py), so bulk only error-free runs.
        got = run_program(eng, ops, 0 if any(op["fails"] for op in ops) else bulk)
        assert got == expected, kind
