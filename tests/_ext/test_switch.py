"""The one switch (``mxref._ext.switch``): MXREF_ENABLE_EXT=0 and a ``reference_kernels()`` block
give the reference everywhere (kernels, engine core, storage core); explicit choices still win."""
import os
import subprocess
import sys

import pytest

from mxref import storage
from mxref._ext import loader, reference_kernels, switch
from mxref.engine import var_queue
from mxref.engine.threaded import ThreadedEnginePerDevice
from mxref.ops import registry


@pytest.fixture(autouse=True)
def _private_status(monkeypatch):
    monkeypatch.setattr(loader, "STATUS", dict(loader.STATUS))


def _cython_built(name):
    try:
        __import__(f"mxref._ext.{name}")
    except ImportError:
        return False
    return True


def test_a_block_sets_the_reference_for_new_engines_and_pools_and_restores():
    before = switch.reference_only(), switch.reason()
    with reference_kernels():
        eng = ThreadedEnginePerDevice()
        try:
            assert eng.core is var_queue
        finally:
            eng.stop()
        assert storage.core_kind() == "python"
        assert not loader.ext_enabled()
        nested = switch.set_reference_only(True, "inner")
        assert switch.reason() == "inner"
        switch.set_reference_only(*nested)
        assert switch.reason() == "reference_kernels()"
    assert (switch.reference_only(), switch.reason()) == before


@pytest.mark.skipif(not (_cython_built("engine_core") and _cython_built("storage_core")),
                    reason="Cython cores not built")
def test_explicit_choices_win_over_the_switch():
    """``use_ext=True`` and ``set_core('cython')`` are requests for the Cython cores, block or not."""
    with reference_kernels():
        eng = ThreadedEnginePerDevice(use_ext=True)
        try:
            assert eng.core is not var_queue
        finally:
            eng.stop()
        old = storage.set_core("cython")
        try:
            assert storage.core_kind() == "cython"
        finally:
            storage.set_core(old)


def test_listeners_hear_each_flip_once():
    heard = []
    switch.on_change(heard.append)
    try:
        state = switch.reference_only()
        with reference_kernels():
            with reference_kernels():
                pass
        assert heard == ([] if state else [True, False])
    finally:
        switch._listeners.remove(heard.append)


def test_enable_ext_0_is_reference_only_for_the_whole_process():
    """Under MXREF_ENABLE_EXT=0 no extension is imported, no host fast kernel registered, and the
    engine, storage and every op get their reference. (The 'gpu' entries stay: CUDA kernels are
    the only way an op runs on a GPU, and they are checked against the same references.)"""
    env = dict(os.environ, MXREF_ENABLE_EXT="0")
    env.pop("MXREF_ENFORCE_EXT", None)
    code = (
        "import mxref as mx, sys\n"
        "from mxref._ext import switch\n"
        "from mxref.ops import registry\n"
        "from mxref.engine.threaded import ThreadedEnginePerDevice\n"
        "assert switch.reference_only() and switch.reason() == 'MXREF_ENABLE_EXT=0'\n"
        "assert registry.list_kernels(device_type='cpu') == []\n"
        "op = registry.get('Convolution')\n"
        "assert registry.get_kernel(op, 'cpu') is op.fcompute\n"
        "e = ThreadedEnginePerDevice(); assert e.core.__name__ == 'mxref.engine.var_queue'; e.stop()\n"
        "assert mx.storage.core_kind() == 'python'\n"
        "assert not any(m.startswith('mxref._ext.') and m.endswith(('_kernels', '_core'))\n"
        "               for m in sys.modules), sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


def test_fast_kernels_are_registered_when_built_and_enabled():
    if switch.reference_only() or not _cython_built("nn_kernels"):
        pytest.skip("extensions disabled or not built")
    ops = {k.op for k in registry.list_kernels(device_type="cpu")}
    assert {"Convolution", "Pooling", "sgd_update", "_softmax_cross_entropy_pick"} <= ops
