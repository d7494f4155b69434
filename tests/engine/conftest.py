"""One fixture runs every engine test on NaiveEngine and on ThreadedEnginePerDevice with each core.

The naive engine has no dependency core, so it appears once; the threaded engine runs with the
pure-Python twin (``var_queue``) and with the Cython core (skipped when it is not built, an error
under ``MXREF_ENFORCE_EXT=1``). The factory lives in ``engine_factory.py`` so test modules can
import it by a name no other test directory uses.
"""
import pytest
from engine_factory import CORES, ENGINE_KINDS, make_engine  # noqa: F401


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


@pytest.fixture(params=["threaded-python", "threaded-cython"])
def inline_engine(request):
    """The threaded engine (both cores) with one CPU worker and the idle run on: an op marked
    ``may_run_inline`` (``engine_factory.marked``) may run on the calling thread."""
    eng = make_engine(request.param, cpu_worker_nthreads=1, run_inline=True)
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
