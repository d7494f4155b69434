"""One fixture runs every engine test on NaiveEngine and on ThreadedEnginePerDevice with each core.

The naive engine has no dependency core, so it appears once; the threaded engine runs with the
pure-Python twin (``var_queue``) and with the Cython core (skipped when it is not built, an error
under ``MXREF_ENFORCE_EXT=1``).
"""
import os

import pytest

from mxref.engine.naive import NaiveEngine
from mxref.engine.threaded import ThreadedEnginePerDevice


def _cython_available():
    try:
        from mxref._ext import engine_core  # noqa: F401
    except ImportError:
        if os.environ.get("MXREF_ENFORCE_EXT") == "1":
            raise
        return False
    return os.environ.get("MXREF_ENABLE_EXT", "1") != "0"


ENGINE_KINDS = ["naive", "threaded-python", "threaded-cython"]
CORES = [pytest.param(False, id="python"), pytest.param(True, id="cython")]


def make_engine(kind, **kwargs):
    """Build an engine by fixture id; ``kwargs`` go to the threaded engine (thread counts, bound)."""
    if kind == "naive":
        return NaiveEngine()
    use_ext = kind == "threaded-cython"
    if use_ext and not _cython_available():
        pytest.skip("Cython engine core not built (python setup.py build_ext --inplace)")
    return ThreadedEnginePerDevice(use_ext=use_ext, **kwargs)


@pytest.fixture(params=ENGINE_KINDS)
def engine(request):
    """Each engine kind, stopped (drained, threads joined) after the test."""
    eng = make_engine(request.param)
    yield eng
    eng.stop()


@pytest.fixture(params=["threaded-python", "threaded-cython"])
def threaded(request):
    """Only the threaded engine (both cores): for tests about threads, queues and timing."""
    eng = make_engine(request.param)
    yield eng
    eng.stop()


@pytest.fixture
def make(request):
    """A factory for engines with custom settings, stopped after the test."""
    made = []

    def factory(kind, **kwargs):
        eng = make_engine(kind, **kwargs)
        made.append(eng)
        return eng
    yield factory
    for eng in made:
        eng.stop()
