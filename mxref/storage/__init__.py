"""Pooled storage per context: ``alloc``/``free`` of raw byte buffers, ``release_all``, ``stats``.

The layers, top to bottom (``docs/architecture/storage.md`` walks through them)::

    storage.alloc / free / direct_free / release_all / stats      this file: the public API
    manager.get_manager(ctx)       one PooledStorageManager per context, configured by env flags
    pool.PooledStorageManager      lock, reserve rule, release-all-and-retry, handles
    PoolCore                       free lists and counters: _ext/storage_core (Cython) or bookkeeping.py
    strategy.Naive/Round/Unpooled  size -> free-list key and block size
    device.CPUDevice / GPUDevice   the raw memory (aligned numpy buffers, PyCUDA mem_alloc)

NDArray memory is taken lazily by the engine worker that first writes an array, and given back
with ``free`` from the function passed to ``engine.delete_variable``, i.e. only after every
operation already queued on the array has run.

Example
-------
>>> from mxref import storage, cpu
>>> h = storage.alloc(1000, cpu())
>>> h.buffer.nbytes, h.buffer.ctypes.data % 64
(1000, 0)
>>> storage.free(h)                     # back to the pool, not to the system
>>> storage.alloc(900, cpu()).size      # same 4096-byte page-rounded block, a pool hit
900
"""
from __future__ import annotations

from typing import Dict, Optional

from .. import profiler as _profiler
from ..base import MXNetError
from ..context import memory_limit
from .bookkeeping import STAT_KEYS
from .handle import FREED, Handle
from .manager import core_kind, get_manager, managers, reset, set_core
from .pool import PooledStorageManager

_prof = _profiler._state

__all__ = ["Handle", "alloc", "free", "direct_free", "release_all", "stats", "describe",
           "get_manager", "set_core", "core_kind", "reset", "PooledStorageManager"]


def alloc(nbytes: int, ctx) -> Handle:
    """Allocate ``nbytes`` bytes on ``ctx``, from its pool when a free block fits.

    Raises ``MXNetError`` when the device is out of memory even after releasing the pool.
    """
    mgr = get_manager(ctx)
    if not _prof.recording:          # a pool hit in one call (profiling records every alloc)
        handle = mgr._lend(mgr, nbytes)
        if handle is not None:
            return handle
    return mgr.alloc(nbytes)


def free(handle: Handle) -> None:
    """Give ``handle``'s memory back to its pool for reuse. Freeing twice raises ``MXNetError``."""
    owner = getattr(handle, "_pool", None)
    if owner.__class__ is PooledStorageManager and not _prof.recording \
            and owner._give_back(owner, handle):
        return                       # back on its free list in one call
    if not isinstance(owner, PooledStorageManager):
        raise _not_lent(handle, owner, "free")
    owner.free(handle)


def direct_free(handle: Handle) -> None:
    """Give ``handle``'s memory straight back to the device, bypassing the pool."""
    owner = getattr(handle, "_pool", None)
    if not isinstance(owner, PooledStorageManager):
        raise _not_lent(handle, owner, "direct_free")
    owner.direct_free(handle)


def _not_lent(handle, owner, what: str) -> MXNetError:
    if owner is FREED:
        return MXNetError(f"storage.{what}: double free of a {handle.size}-byte handle on {handle.ctx} "
                          "(it was already given back)")
    return MXNetError(f"storage.{what}: {handle!r} was not allocated by mxref.storage (foreign handle)")


def release_all(ctx=None) -> None:
    """Return the pooled (free) memory of ``ctx``, or of every context, to the device.

    Memory still in use is untouched. ``ctx.empty_cache()`` calls this.
    """
    if ctx is None:
        targets = list(managers().values())
    else:
        mgr = managers().get(ctx)
        targets = [] if mgr is None else [mgr]
    for mgr in targets:
        mgr.release_all()


def stats(ctx=None) -> Dict[str, int]:
    """Counters of the pool of ``ctx``; with ``ctx=None`` the sums over every pool made so far.

    Keys: ``bytes_in_use`` (blocks lent out, rounded sizes), ``bytes_pooled`` (blocks kept for
    reuse), ``peak_bytes_in_use`` (per pool; summed over pools when ``ctx`` is ``None``),
    ``num_alloc``, ``num_free``, ``num_pool_hits``, ``num_release_all``.
    """
    if ctx is not None:
        return get_manager(ctx).stats()
    total = dict.fromkeys(STAT_KEYS, 0)
    for mgr in managers().values():
        for key, value in mgr.stats().items():
            total[key] += value
    return total


def describe(ctx: Optional[object] = None) -> Dict[str, str]:
    """What each pool runs with (strategy, reserve, bookkeeping), by context; for ``mxref.info()``."""
    pools = managers() if ctx is None else {ctx: get_manager(ctx)}
    return {str(c): (f"{m.strategy.kind} (page {m.strategy.page_size}, reserve {m.reserve_percent}%, "
                     f"{m.core_kind} bookkeeping{_limit_note(c)})") for c, m in pools.items()}


def _limit_note(ctx) -> str:
    limit = memory_limit(ctx)
    return "" if limit is None else f", limit {limit} bytes"
