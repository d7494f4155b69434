"""Fixtures shared by the whole suite."""
import pytest

import mxref as mx
from mxref import engine
from mxref.ndarray import imperative


@pytest.fixture(params=["NaiveEngine", "ThreadedEnginePerDevice"])
def any_engine(request):
    """Switch to the named engine for one test, then restore the previous one (a test may leave
    an error nobody waited for; it is dropped with the engine)."""
    old = engine.get().name
    engine.set_engine(request.param)
    yield request.param
    try:
        engine.get().wait_for_all()
    except mx.MXNetError:
        pass
    engine.set_engine(old)


@pytest.fixture
def tuned_paths():
    """Run one test on the tuned dispatch and backward paths, whatever the environment selects
    (for tests of the tuned paths' own caches and tricks, which the plain paths do without)."""
    with imperative.plain_paths(False):
        yield


@pytest.fixture
def invoked(monkeypatch):
    """The names of the operators ``imperative.invoke`` is called with during the test, in order
    (a spy that calls through; removed after the test)."""
    names = []
    real = imperative.invoke

    def spy(op, *args, **kwargs):
        names.append(op.name)
        return real(op, *args, **kwargs)

    monkeypatch.setattr(imperative, "invoke", spy)
    return names
