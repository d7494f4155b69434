"""The one switch between mxref's fast paths and its reference: every subsystem asks it.

*Reference only* means: the pure-Python engine core (``var_queue``), the pure-Python storage
bookkeeping (``PoolCore``) and the numpy reference kernel of every operator. It starts as
``MXREF_ENABLE_EXT=0`` says (read once, at import) and tests flip it for a block::

    with mxref._ext.reference_kernels():
        ex = sym.simple_bind(mx.cpu(), x=(2, 3))     # this executor runs numpy kernels only

Who asks, and when:

* the kernel table (``mxref.ops.registry.get_kernel``): at every lookup; flipping the switch
  swaps the table's active entries, so kernels resolved from now on follow it. Imperative calls
  follow at once (their cached plans resolve again when the table changes); executors keep the
  kernels they resolved at bind (an executor bound inside the block stays a reference executor);
* the engine (``ThreadedEnginePerDevice(use_ext=None)``) and storage pools (``set_core(None)``):
  when they are created, through ``mxref._ext.loader.load``.

Explicit choices (``use_ext=True/False``, ``storage.set_core('python')``) win over the switch.
``MXREF_ENFORCE_EXT=1`` is separate: it makes a missing extension an error (and contradicts
``MXREF_ENABLE_EXT=0`` in the environment, but not a block that asks for reference kernels).
"""
from __future__ import annotations

import contextlib
import os
from typing import Callable, Iterator, List, Tuple

__all__ = ["reference_only", "reason", "enforce", "set_reference_only", "reference_kernels",
           "fast_kernels", "on_change"]

ENV_REASON = "MXREF_ENABLE_EXT=0"

_ref = os.environ.get("MXREF_ENABLE_EXT", "1") == "0"
_reason = ENV_REASON if _ref else ""
_listeners: List[Callable[[bool], None]] = []


def reference_only() -> bool:
    """Whether only reference implementations are to be used now."""
    return _ref


def reason() -> str:
    """Why the switch is in its state: ``'MXREF_ENABLE_EXT=0'``, the name of the block that set
    it, or ``''`` when fast paths are allowed."""
    return _reason


def enforce() -> bool:
    """``MXREF_ENFORCE_EXT=1``: a Cython extension that cannot be imported is an error."""
    return os.environ.get("MXREF_ENFORCE_EXT") == "1"


def set_reference_only(flag: bool, why: str = "set_reference_only(True)") -> Tuple[bool, str]:
    """Set the switch; returns the previous ``(state, reason)`` (give it back to restore).

    Listeners (the kernel table) are told at once; engines and pools made earlier keep their core.
    """
    global _ref, _reason
    old = (_ref, _reason)
    _ref, _reason = bool(flag), (why if flag else "")
    if _ref != old[0]:
        for fn in list(_listeners):
            fn(_ref)
    return old


def _restore(old: Tuple[bool, str]) -> None:
    set_reference_only(old[0], old[1])


@contextlib.contextmanager
def reference_kernels(why: str = "reference_kernels()") -> Iterator[None]:
    """Reference implementations only inside the block (kernels resolved, engines and pools made
    there); the previous state afterwards."""
    old = set_reference_only(True, why)
    try:
        yield
    finally:
        _restore(old)


@contextlib.contextmanager
def fast_kernels() -> Iterator[None]:
    """The opposite block: fast paths allowed inside it whatever the state outside (for a test
    that registers a kernel of its own). Under ``MXREF_ENABLE_EXT=0`` no kernel extension was
    imported, so only kernels registered from Python become active; an engine or pool made inside
    the block may load its Cython core."""
    old = set_reference_only(False)
    try:
        yield
    finally:
        _restore(old)


def on_change(fn: Callable[[bool], None]) -> None:
    """Call ``fn(reference_only)`` whenever the switch flips."""
    _listeners.append(fn)
