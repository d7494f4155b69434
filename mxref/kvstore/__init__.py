"""``mx.kv`` / ``mx.kvstore``: key-value stores that sum values over devices and apply updates.

Layout: ``base.py`` (the ``KVStore`` API, key handling, checks, updaters, the type registry),
``local.py`` (``local``: merge and update on the CPU), ``device.py`` (``device``: merge buffers
spread over the devices), ``compression.py`` (2-bit gradient compression), ``ps/`` (the
parameter server over MPI, imported on the first ``create`` of a ``dist`` type). A new store
type is one file registered with ``@KVStore.register``; ``docs/architecture/kvstore.md`` walks
through one push.
"""
from . import base as _base
from . import compression
from .base import KVStore, KVStoreBase
from .device import DeviceKVStore
from .local import LocalKVStore

__all__ = ["KVStore", "KVStoreBase", "LocalKVStore", "DeviceKVStore", "create", "compression"]


def create(name: str = "local") -> KVStore:
    """Create a store by type name: ``'local'``, ``'device'``, or a ``'dist_*'`` type.

    Names follow MXNet: lower-cased, and unregistered names fall back by substring (see
    ``mxref.kvstore.base.create``). ``dist`` names load ``mxref.kvstore.ps`` first, so plain
    ``import mxref`` never imports the MPI code.
    """
    if isinstance(name, str) and "dist" in name.lower():
        from .ps import create as dist_create  # noqa: PLC0415 - registers the dist_* types
        return dist_create(name)
    return _base.create(name)
