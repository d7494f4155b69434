"""Fixtures for the storage tests: both bookkeeping paths (pure Python and Cython) and a clean registry."""
import pytest
from storage_helpers import cython_core_cls

from mxref.storage import bookkeeping, manager


@pytest.fixture(params=["python", "cython"])
def core_cls(request):
    """Each test using this runs once per bookkeeping path."""
    return bookkeeping.PoolCore if request.param == "python" else cython_core_cls()


@pytest.fixture
def fresh_storage(monkeypatch):
    """Forget every pool before and after the test, so env flags set with monkeypatch take effect."""
    manager.reset()
    old = manager.set_core(None)
    yield monkeypatch
    manager.reset()
    manager.set_core(old)
