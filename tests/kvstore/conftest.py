"""Fixtures for the kvstore tests: run a test under each engine, and on each single-process store type."""
import pytest

import mxref as mx
from mxref import engine


@pytest.fixture(params=["NaiveEngine", "ThreadedEnginePerDevice"])
def any_engine(request):
    """Switch to the named engine for one test, then restore the previous one."""
    old = engine.get().name
    engine.set_engine(request.param)
    yield request.param
    try:
        engine.get().wait_for_all()
    except mx.MXNetError:
        pass
    engine.set_engine(old)


@pytest.fixture(params=["local", "device"])
def kv_type(request):
    """The name of each single-process store type."""
    return request.param
