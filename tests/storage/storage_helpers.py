"""Helpers shared by the storage tests (a uniquely named module: test directories are not packages)."""
import os

import pytest


def cython_core_cls():
    """The Cython ``PoolCore``; skips when not built (fails under ``MXREF_ENFORCE_EXT=1``)."""
    try:
        from mxref._ext import storage_core
    except ImportError:
        if os.environ.get("MXREF_ENFORCE_EXT") == "1":
            raise
        pytest.skip("mxref._ext.storage_core is not built")
    return storage_core.PoolCore
