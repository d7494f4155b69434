"""Choose between a Cython fast path and its pure-Python twin, and remember why.

The choice follows the one switch, ``mxref._ext.switch`` (``MXREF_ENABLE_EXT=0``, or a
``reference_kernels()`` block): reference only means pure Python. ``MXREF_ENFORCE_EXT=1`` makes a
missing or broken extension an error. ``mxref.info()`` prints ``STATUS``.
"""
from __future__ import annotations

import importlib
from typing import Dict, Optional, Tuple

from ..base import MXNetError
from . import switch

__all__ = ["load", "STATUS", "ext_enabled"]

STATUS: Dict[str, Tuple[str, str]] = {}   # extension name -> (path used, reason)


def ext_enabled() -> bool:
    """Whether fast paths are allowed now (the switch is not set to reference only)."""
    return not switch.reference_only()


def load(name: str, purpose: str = "") -> Optional[object]:
    """Import ``mxref._ext.<name>`` if allowed and built; ``None`` means use the pure-Python twin."""
    enforce = switch.enforce()
    if switch.reference_only():
        why = switch.reason()
        if enforce and why == switch.ENV_REASON:
            raise MXNetError("MXREF_ENABLE_EXT=0 and MXREF_ENFORCE_EXT=1 contradict each other")
        STATUS[name] = ("python", why)
        return None
    try:
        mod = importlib.import_module(f"mxref._ext.{name}")
    except ImportError as exc:
        if enforce:
            raise MXNetError(f"MXREF_ENFORCE_EXT=1 but the Cython extension mxref._ext.{name} "
                             f"({purpose or 'fast path'}) is not importable: {exc}. "
                             "Build it with `python setup.py build_ext --inplace`.") from exc
        STATUS[name] = ("python", f"extension not built ({exc})")
        return None
    STATUS[name] = ("cython", "built and enabled")
    return mod
