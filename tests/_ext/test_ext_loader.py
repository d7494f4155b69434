"""The extension loader: pure Python on request, an error when enforced and missing, reasons recorded."""
import pytest

from mxref._ext import loader, switch
from mxref.base import MXNetError


@pytest.fixture(autouse=True)
def _private_status(monkeypatch):
    """Each test records into its own table, so mxref.info() later in the run stays true."""
    monkeypatch.setattr(loader, "STATUS", dict(loader.STATUS))


def test_disabled_extensions_use_pure_python_and_say_why(monkeypatch):
    """With the switch set as MXREF_ENABLE_EXT=0 sets it, extensions are not loaded, and why."""
    monkeypatch.delenv("MXREF_ENFORCE_EXT", raising=False)
    with switch.reference_kernels(switch.ENV_REASON):
        assert not loader.ext_enabled()
        assert loader.load("engine_core") is None
    assert loader.STATUS["engine_core"] == ("python", "MXREF_ENABLE_EXT=0")


def test_a_reference_block_uses_pure_python_and_names_itself(monkeypatch):
    """A test's reference_kernels() block gives pure Python too, even under MXREF_ENFORCE_EXT=1
    (asking for the reference is not a missing extension)."""
    monkeypatch.setenv("MXREF_ENFORCE_EXT", "1")
    with switch.reference_kernels():
        assert loader.load("engine_core") is None
    assert loader.STATUS["engine_core"] == ("python", "reference_kernels()")


def test_enforce_with_disable_is_a_configuration_error(monkeypatch):
    monkeypatch.setenv("MXREF_ENFORCE_EXT", "1")
    with switch.reference_kernels(switch.ENV_REASON):
        with pytest.raises(MXNetError, match="contradict"):
            loader.load("engine_core")


def test_missing_extension_falls_back_or_fails_when_enforced(monkeypatch):
    monkeypatch.delenv("MXREF_ENFORCE_EXT", raising=False)
    old = switch.set_reference_only(False)
    try:
        assert loader.load("no_such_extension") is None
        path, reason = loader.STATUS["no_such_extension"]
        assert path == "python" and "not built" in reason
        monkeypatch.setenv("MXREF_ENFORCE_EXT", "1")
        with pytest.raises(MXNetError, match="no_such_extension"):
            loader.load("no_such_extension")
    finally:
        switch.set_reference_only(*old)
