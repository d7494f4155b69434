"""Choose between a Cython fast path and its pure-Python twin, and remember why.

``MXREF_ENABLE_EXT=0`` forces pure Python; ``MXREF_ENFORCE_EXT=1`` makes a missing or broken
extension an error. ``mxref.info()`` prints ``STATUS``.
"""
from __future__ import annotations

import importlib
import os
from typing import Dict, Optional, Tuple

from ..base import MXNetError

__all__ = ["load", "STATUS", "ext_enabled"]

STATUS: Dict[str, Tuple[str, str]] = {}   # extension name -> (path used, reason)


def ext_enabled() -> bool:
    return os.environ.get("MXREF_ENABLE_EXT", "1") != "0"


def load(name: str, purpose: str = "") -> Optional[object]:
    """Import ``mxref._ext.<name>`` if allowed and built; ``None`` means use the pure-Python twin."""
    enforce = os.environ.get("MXREF_ENFORCE_EXT") == "1"
    if not ext_enabled():
        if enforce:
            raise MXNetError("MXREF_ENABLE_EXT=0 and MXREF_ENFORCE_EXT=1 contradict each other")
        STATUS[name] = ("python", "MXREF_ENABLE_EXT=0")
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
