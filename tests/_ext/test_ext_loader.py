"""The extension loader: pure Python on request, an error when enforced and missing, reasons recorded."""
import pytest

from mxref._ext import loader
from mxref.base import MXNetError


@pytest.fixture(autouse=True)
def _private_status(monkeypatch):
    """Each test records into its own table, so mxref.info() later in the run stays true."""
    monkeypatch.setattr(loader, "STATUS", dict(loader.STATUS))


def test_disabled_extensions_use_pure_python_and_say_why(monkeypatch):
    monkeypatch.setenv("MXREF_ENABLE_EXT", "0")
    monkeypatch.delenv("MXREF_ENFORCE_EXT", raising=False)
    assert loader.load("engine_core") is None
    assert loader.STATUS["engine_core"] == ("python", "MXREF_ENABLE_EXT=0")


def test_enforce_with_disable_is_a_configuration_error(monkeypatch):
    monkeypatch.setenv("MXREF_ENABLE_EXT", "0")
    monkeypatch.setenv("MXREF_ENFORCE_EXT", "1")
    with pytest.raises(MXNetError, match="contradict"):
        loader.load("engine_core")


def test_missing_extension_falls_back_or_fails_when_enforced(monkeypatch):
    monkeypatch.setenv("MXREF_ENABLE_EXT", "1")
    monkeypatch.delenv("MXREF_ENFORCE_EXT", raising=False)
    assert loader.load("no_such_extension") is None
    path, reason = loader.STATUS["no_such_extension"]
    assert path == "python" and "not built" in reason
    monkeypatch.setenv("MXREF_ENFORCE_EXT", "1")
    with pytest.raises(MXNetError, match="no_such_extension"):
        loader.load("no_such_extension")
