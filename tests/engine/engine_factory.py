"""Engine factory shared by the engine tests: every engine kind, by fixture id."""
import os

import pytest

from mxref._ext import switch
from mxref.engine.naive import NaiveEngine
from mxref.engine.threaded import ThreadedEnginePerDevice


def _cython_available():
    try:
        from mxref._ext import engine_core  # noqa: F401
    except ImportError:
        if os.environ.get("MXREF_ENFORCE_EXT") == "1":
            raise
        return False
    return not switch.reference_only()


ENGINE_KINDS = ["naive", "threaded-python", "threaded-cython"]
CORES = [pytest.param(False, id="python"), pytest.param(True, id="cython")]


def make_engine(kind, **kwargs):
    """Build an engine by fixture id; ``kwargs`` go to the threaded engine (thread counts, bound)."""
    if kind == "naive":
        return NaiveEngine()
    use_ext = kind == "threaded-cython"
    if use_ext and not _cython_available():
        pytest.skip("Cython engine core not built (python setup.py build_ext --inplace)")
    # Two CPU workers (the default is one, as MXNet's): the tests check that independent ops
    # really overlap.
    kwargs.setdefault("cpu_worker_nthreads", 2)
    return ThreadedEnginePerDevice(use_ext=use_ext, **kwargs)


def marked(fn):
    """``fn``, marked as an op the engine may run on the pushing thread when it is idle."""
    fn.may_run_inline = True
    return fn


def queue_behind_a_blocker(eng, ctx, log):
    """On a one-worker engine: a blocked op, then a write to a new variable ``d`` (logs "w"), then
    three independent ops (log "n0".."n2"), all queued. Returns ``(gate, d)``; ``gate.set()``
    releases the worker. What the test pushes next shows where it lands in that queue."""
    import threading  # noqa: PLC0415
    gate, d = threading.Event(), eng.new_variable()
    eng.push_sync(lambda r: gate.wait(10), ctx, (), (eng.new_variable(),), name="blocker")
    eng.push_sync(lambda r: log.append("w"), ctx, (), (d,))
    for i in range(3):
        eng.push_sync(lambda r, i=i: log.append(f"n{i}"), ctx, (), (eng.new_variable(),))
    return gate, d
