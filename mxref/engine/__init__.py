"""The dependency engine: pick one by ``MXNET_ENGINE_TYPE`` and reach it with ``engine.get()``.

``mx.engine.set_bulk_size`` and ``mx.engine.bulk`` are MXNet's bulk-execution controls.
"""
from __future__ import annotations

import atexit
import contextlib
import sys
import threading
from typing import Callable, List

from .. import profiler as _profiler
from ..base import MXNetError, env_str
from .base import Engine, FnProperty, RunContext
from .naive import NaiveEngine

__all__ = ["get", "set_engine", "engine_type", "describe", "set_bulk_size", "bulk", "Engine",
           "FnProperty", "RunContext", "NaiveEngine", "ENGINE_TYPES"]


def _threaded():
    from .threaded import ThreadedEnginePerDevice  # noqa: PLC0415 - imported on first use
    return ThreadedEnginePerDevice()


# MXNet's names. "ThreadedEngine" (one shared pool) maps to the per-device engine here.
ENGINE_TYPES = {
    "NaiveEngine": NaiveEngine,
    "ThreadedEnginePerDevice": _threaded,
    "ThreadedEngine": _threaded,
}

_lock = threading.Lock()
_engine: Engine | None = None


def get() -> Engine:
    """The process-wide engine, created on first use from ``MXNET_ENGINE_TYPE``."""
    global _engine
    eng = _engine
    if eng is None:
        with _lock:
            if _engine is None:
                _engine = _create(env_str("MXNET_ENGINE_TYPE", "ThreadedEnginePerDevice"))
            eng = _engine
    return eng


def _create(name: str) -> Engine:
    if name not in ENGINE_TYPES:
        raise MXNetError(f"unknown MXNET_ENGINE_TYPE {name!r}; expected one of {sorted(ENGINE_TYPES)}")
    return ENGINE_TYPES[name]()


def engine_type() -> str:
    """The active engine's MXNet name (``NaiveEngine`` or ``ThreadedEnginePerDevice``)."""
    return get().name


def describe() -> dict:
    """What ``mxref.info()`` shows: engine type, core (cython/python), threads per worker group."""
    return get().describe()


_switch_listeners: List[Callable[[], None]] = []


def on_switch(listener: Callable[[], None]) -> Callable[[], None]:
    """Call ``listener()`` each time ``set_engine`` has drained the old engine, before the new one
    exists. Whatever holds variables of the old engine forgets them there (``mxref/resource.py``
    registers this way, so the engine never imports the layers that use it)."""
    _switch_listeners.append(listener)
    return listener


def set_engine(name: str) -> Engine:
    """Drain the current engine and switch to another one (used by tests and benchmarks)."""
    global _engine
    with _lock:
        old, _engine = _engine, None
    if old is not None:
        old.stop()
    for listener in _switch_listeners:
        listener()
    with _lock:
        _engine = _create(name)
        return _engine


def set_bulk_size(size: int) -> int:
    """Batch up to ``size`` consecutive imperative operations into one engine push; return the old size."""
    return get().set_bulk_size(size)


@contextlib.contextmanager
def bulk(size: int):
    """``with mx.engine.bulk(16): ...`` bulks the operations inside and restores the old size after."""
    old = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(old)


@atexit.register
def _shutdown():
    eng = _engine
    if eng is not None:
        if isinstance(getattr(sys, "last_value", None), KeyboardInterrupt):
            # The program ends with an uncaught Ctrl-C: do not run what it left queued.
            eng.cancel()
        try:
            eng.stop()
        except MXNetError:
            pass  # errors nobody waited for are dropped at exit, as MXNet does
    # After the drain, so an auto-started profile holds every operation the program pushed.
    _profiler._at_engine_exit()
