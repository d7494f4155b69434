"""One pooled manager per context, created lazily from the environment, and the bookkeeping choice.

Strategy by device (MXNet 2.0's per-device names; 1.9.1 read only the ``GPU`` ones):

========================  =========================================  =========
context                   variables                                  default
========================  =========================================  =========
``cpu(i)``                ``MXNET_CPU_MEM_POOL_TYPE``, ``MXNET_CPU_*``  ``Naive``
``cpu_pinned(i)``         ``MXNET_CPU_PINNED_MEM_POOL_TYPE``, ...    ``Naive``
``gpu(i)``                ``MXNET_GPU_MEM_POOL_TYPE``, ...           ``Naive``
``cpu_shared(i)``         (not pooled)                               ``Unpooled``
========================  =========================================  =========

NOTE: MXNet 1.9.1 does not pool CPU memory. mxref does by default, because arrays are allocated
on engine workers and freed through ``delete_variable``: a pool turns that steady churn of
same-sized buffers (activations, gradients, batches) into reuse of warm pages instead of fresh
``malloc`` + page faults. ``MXNET_CPU_MEM_POOL_TYPE=Unpooled`` restores MXNet 1.9.1's behaviour,
and ``MXNET_USE_NAIVE_STORAGE_MANAGER=1`` turns pooling off everywhere.

Every host context shares one ``CPUDevice``, so ``MXREF_CPU_MEM_LIMIT`` caps host memory for the
whole process; each context still keeps its own free lists, as each MXNet device id does.
"""
from __future__ import annotations

import threading
from typing import Dict, Optional

from ..base import MXNetError, env_bool, env_int
from .bookkeeping import PoolCore
from .device import CPUDevice, GPUDevice
from .pool import PooledStorageManager
from .strategy import UnpooledStrategy, strategy_from_env

__all__ = ["get_manager", "managers", "set_core", "core_kind", "reset", "DEFAULT_POOL_TYPE"]

DEFAULT_POOL_TYPE = {"cpu": "Naive", "cpu_pinned": "Naive", "gpu": "Naive"}
_ENV_PREFIX = {"cpu": "CPU", "cpu_pinned": "CPU_PINNED", "gpu": "GPU"}

_lock = threading.Lock()
_managers: Dict[object, PooledStorageManager] = {}
# The last (context, manager) looked up: allocations come in runs on one Context object, and an
# identity test skips Context's Python-level __hash__/__eq__ in the dict lookup.
_last: tuple = (None, None)
_cpu_device: Optional[CPUDevice] = None
_core_override: Optional[str] = None     # "python" / "cython" / None (= the loader decides)


def get_manager(ctx) -> PooledStorageManager:
    """The pool of ``ctx``, created on first use (thread-safe)."""
    global _last
    last_ctx, mgr = _last          # one read of the pair: another thread may replace it
    if ctx is last_ctx:
        return mgr
    with _lock:                    # under the lock, so reset() cannot leave a stale pair behind
        mgr = _managers.get(ctx)
        if mgr is None:
            mgr = _managers[ctx] = _create(ctx)
        _last = (ctx, mgr)
    return mgr


def managers() -> Dict[object, PooledStorageManager]:
    """A snapshot of the pools created so far, by context."""
    with _lock:
        return dict(_managers)


def _create(ctx) -> PooledStorageManager:
    devtype = ctx.device_type
    if devtype == "gpu":
        device = GPUDevice(ctx.device_id)
    else:
        device = _shared_cpu_device()
    if devtype == "cpu_shared" or env_bool("MXNET_USE_NAIVE_STORAGE_MANAGER", False):
        strategy, reserve = UnpooledStrategy(), 0
    else:
        prefix = _ENV_PREFIX[devtype]
        strategy = strategy_from_env(prefix, DEFAULT_POOL_TYPE[devtype])
        reserve = env_int(f"MXNET_{prefix}_MEM_POOL_RESERVE", 5)
    return PooledStorageManager(ctx, device, strategy, reserve, _core_class())


def _shared_cpu_device() -> CPUDevice:
    global _cpu_device
    if _cpu_device is None:
        limit = env_int("MXREF_CPU_MEM_LIMIT", 0)
        _cpu_device = CPUDevice(limit if limit > 0 else None)
    return _cpu_device


def _core_class():
    if _core_override == "python":
        return PoolCore
    if _core_override == "cython":
        try:
            from .._ext import storage_core  # noqa: PLC0415
        except ImportError as exc:
            raise MXNetError("storage: the Cython bookkeeping (mxref._ext.storage_core) is not built; "
                             "run `python setup.py build_ext --inplace`") from exc
        return storage_core.PoolCore
    from .._ext import loader  # noqa: PLC0415 - records the choice for mxref.info()
    mod = loader.load("storage_core", "storage pool bookkeeping")
    return PoolCore if mod is None else mod.PoolCore


def set_core(kind: Optional[str]) -> Optional[str]:
    """Choose the bookkeeping for pools created from now on: ``"python"``, ``"cython"`` or ``None``
    (the one switch decides: ``MXREF_ENABLE_EXT=0`` or a ``mxref._ext.reference_kernels()`` block
    means pure Python; see ``mxref._ext.switch``). Returns the previous choice. Meant for tests
    and benchmarks; call ``reset()`` to drop the pools already made."""
    global _core_override
    if kind not in (None, "python", "cython"):
        raise MXNetError(f"storage.set_core: expected 'python', 'cython' or None, got {kind!r}")
    old, _core_override = _core_override, kind
    if kind == "cython":
        try:
            _core_class()      # fail now, not at the next allocation
        except MXNetError:
            _core_override = old
            raise
    return old


def core_kind() -> str:
    """``"cython"`` or ``"python"``: the bookkeeping the next new pool will use."""
    return "python" if _core_class() is PoolCore else "cython"


def reset() -> None:
    """Release and forget every pool and re-read the environment (tests). Handles still lent
    keep working: freeing one goes back to its old pool."""
    global _cpu_device, _last
    with _lock:
        old = list(_managers.values())
        _managers.clear()
        _last = (None, None)
        _cpu_device = None
    for mgr in old:
        mgr.release_all()
