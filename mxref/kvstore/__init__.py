"""``mx.kv`` / ``mx.kvstore``: key-value stores that sum values over devices and apply updates.

Layout: ``base.py`` (the ``KVStore`` API, key handling, checks, updaters, the type registry and
``create``), ``local.py`` (``local``: merge and update on the CPU), ``device.py`` (``device``:
merge buffers spread over the devices), ``compression.py`` (2-bit gradient compression). A new
store type is one file registered with ``@KVStore.register``; ``docs/architecture/kvstore.md``
walks through one push.
"""
from . import compression
from .base import KVStore, KVStoreBase, create
from .device import DeviceKVStore
from .local import LocalKVStore

__all__ = ["KVStore", "KVStoreBase", "LocalKVStore", "DeviceKVStore", "create", "compression"]
