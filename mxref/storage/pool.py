"""The pooled storage manager of one context: free lists, reserve rule, release-all-and-retry.

The algorithm is MXNet's ``GPUPooledStorageManager`` (``src/storage/pooled_storage_manager.h``)::

    alloc(n):  key = bucket(n); a free block under key?  -> hand it out (a pool hit)
               else: if the device is inside its reserve -> release_all()
                     block = device.alloc(block_size(key)); on out-of-memory: release_all(), retry once
    free(h):   push h's block on its free list (nothing goes back to the device)

The bookkeeping (keys, free lists, counters) lives in ``PoolCore``: the Cython
``mxref._ext.storage_core`` when built, else its pure-Python twin ``bookkeeping.py``.
"""
from __future__ import annotations

import sys
import threading
from typing import Dict, Optional

from .. import profiler as _profiler
from ..base import MXNetError
from ..context import memory_limit
from .bookkeeping import PoolCore
from .device import OutOfMemory
from .handle import FREED, Handle
from .strategy import Strategy

_prof = _profiler._state    # its ``recording`` flag is all a pool reads while nobody profiles

__all__ = ["PooledStorageManager"]

# Far beyond any real device; keeps the C arithmetic of the Cython twin from overflowing.
_MAX_REQUEST = 1 << 60


def _fast_paths(core):
    """``(lend, take_back)`` for a pool with bookkeeping ``core``: the compiled pair when ``core``
    is the Cython ``PoolCore``, else the Python methods (the readable twins)."""
    mod = sys.modules.get(type(core).__module__)
    if getattr(mod, "IMPLEMENTATION", None) == "cython" and hasattr(mod, "lend"):
        return mod.lend, mod.take_back
    return PooledStorageManager._lend_hit, PooledStorageManager._take_back


class PooledStorageManager:
    """Hands out blocks of one context's memory and keeps freed blocks for reuse.

    Parameters
    ----------
    ctx : Context
        The context this pool serves (stored on every handle).
    device : object
        The raw allocator (``device.CPUDevice`` or ``device.GPUDevice``).
    strategy : Strategy
        How sizes map to free lists (``Naive``, ``Round`` or ``Unpooled``).
    reserve_percent : int
        Part of the device's total memory to keep free (``MXNET_GPU_MEM_POOL_RESERVE``): a miss
        that would eat into it first releases the pool.
    core_cls : type, optional
        The bookkeeping class; default the pure-Python ``PoolCore``.

    ``alloc``, ``free``, ``direct_free``, ``release_all`` and ``stats`` may be called from any
    thread (engine workers allocate concurrently); one lock guards the pool, as in MXNet (a
    re-entrant one: see ``__init__``).
    """

    def __init__(self, ctx, device, strategy: Strategy, reserve_percent: int = 5, core_cls=None):
        if not 0 <= reserve_percent <= 100:
            raise MXNetError(f"storage: reserve percent for {ctx} must be in [0, 100], got {reserve_percent}")
        self.ctx = ctx
        self.device = device
        self.strategy = strategy
        self.reserve_percent = int(reserve_percent)
        self._core = (core_cls or PoolCore)(strategy)
        self.core_kind = "python" if isinstance(self._core, PoolCore) else "cython"
        # Host blocks are numpy arrays: hand out an exact-size view. Device blocks go out whole.
        self._host = ctx.device_type != "gpu"
        self._unpooled = strategy.kind == "Unpooled"
        # The hit path of alloc and the pooled path of free, compiled with the Cython bookkeeping;
        # plain functions taking the pool first, called as ``pool._lend(pool, n)``.
        self._lend, self._give_back = _fast_paths(self._core)
        # Re-entrant: the device allocation inside ``alloc`` can run the garbage collector, whose
        # ``Chunk.__del__`` frees another block into this pool on the same thread. The pool's
        # state is consistent at that point (a miss is only recorded after the allocation).
        self._lock = threading.RLock()

    # -- public API -------------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> Handle:
        """A handle to at least ``nbytes`` bytes; reuses a pooled block when one fits."""
        if not 0 <= nbytes < _MAX_REQUEST:
            raise MXNetError(f"storage: cannot allocate {nbytes} bytes on {self.ctx}")
        core = self._core
        with self._lock:
            key = core.bucket(nbytes)
            block = core.take(key)
            if block is None:
                block = self._alloc_from_device(key, nbytes)
                core.track_new(key)
            if _prof.recording:
                _profiler.record_memory(self.ctx, core.bytes_in_use)
        return self._handle(block, nbytes, key)

    def _handle(self, block, nbytes: int, key) -> Handle:
        """A handle to ``nbytes`` of the pooled ``block`` (bucket ``key``), as alloc and a hit give it."""
        handle = Handle.__new__(Handle)
        handle.buffer = block[:nbytes] if self._host else block
        handle.size = nbytes
        handle.ctx = self.ctx
        handle._block = block
        handle._key = key
        handle._pool = self
        return handle

    def _lend_hit(self, nbytes: int) -> Optional[Handle]:
        """``alloc``'s pool hit alone: a handle to a pooled block for ``nbytes``, or ``None`` (a
        miss, or a request ``alloc`` must check). ``storage.alloc`` asks it first while nobody
        profiles; the compiled twin is ``storage_core.lend``."""
        if not 0 <= nbytes < _MAX_REQUEST:
            return None
        core = self._core
        with self._lock:
            key = core.bucket(nbytes)
            block = core.take(key)
        if block is None:
            return None
        return self._handle(block, nbytes, key)

    def _take_back(self, handle: Handle) -> bool:
        """``free`` of a live handle of this pool into its free list, or ``False`` (``free`` does
        the rest: a foreign or freed handle's error, an unpooled strategy's device free).
        ``storage.free`` asks it first while nobody profiles; the compiled twin is
        ``storage_core.take_back``."""
        if self._unpooled:
            return False
        with self._lock:
            if handle._pool is not self:
                return False
            key, block = handle._key, handle._block
            handle._pool = FREED
            handle._block = None
            self._core.give(key, block)
            handle.buffer = None
        return True

    def free(self, handle: Handle) -> None:
        """Give ``handle``'s block back to the pool (the device keeps the memory)."""
        with self._lock:
            key, block = self._claim(handle, "free")
            pooled = self._core.give(key, block)
            if _prof.recording:
                _profiler.record_memory(self.ctx, self._core.bytes_in_use)
            if pooled:
                return
            self.device.free(block, self._core.block_size(key))

    def direct_free(self, handle: Handle) -> None:
        """Give ``handle``'s block straight back to the device, bypassing the pool."""
        with self._lock:
            key, block = self._claim(handle, "direct_free")
            self._core.forget(key)
            if _prof.recording:
                _profiler.record_memory(self.ctx, self._core.bytes_in_use)
            self.device.free(block, self._core.block_size(key))

    def release_all(self) -> None:
        """Return every pooled (free) block to the device; blocks in use are not touched."""
        with self._lock:
            self._release_all_locked()

    def stats(self) -> Dict[str, int]:
        """``bytes_in_use``, ``bytes_pooled``, ``peak_bytes_in_use``, ``num_alloc``, ``num_free``,
        ``num_pool_hits``, ``num_release_all``; byte counts are of whole (rounded) blocks."""
        with self._lock:
            return self._core.stats()

    def free_counts(self) -> Dict[int, int]:
        """Blocks waiting in each non-empty free list, by key (for tests and debugging)."""
        with self._lock:
            return self._core.free_counts()

    def __repr__(self):
        return (f"<PooledStorageManager {self.ctx} {self.strategy!r} reserve={self.reserve_percent}% "
                f"core={self.core_kind}>")

    # -- internals (called with the lock held) ------------------------------------------------------

    def _claim(self, handle: Handle, what: str):
        """Check that this pool handed ``handle`` out and is still lent; mark it given back."""
        owner = getattr(handle, "_pool", None)
        if owner is not self:
            raise self._bad_handle(handle, owner, what)
        key, block = handle._key, handle._block
        handle._pool = FREED
        handle._block = None
        handle.buffer = None
        return key, block

    def _bad_handle(self, handle, owner, what: str) -> MXNetError:
        if owner is FREED:
            return MXNetError(f"storage.{what}: double free of a {handle.size}-byte handle on {self.ctx} "
                              "(it was already given back)")
        if isinstance(owner, PooledStorageManager):
            return MXNetError(f"storage.{what}: handle belongs to the pool of {owner.ctx}, not of {self.ctx}")
        return MXNetError(f"storage.{what}: {handle!r} was not allocated by mxref.storage (foreign handle)")

    def _alloc_from_device(self, key: int, nbytes: int):
        size = self._core.block_size(key)
        limit = memory_limit(self.ctx)
        if limit is not None:
            self._check_limit(limit, nbytes, size)
        free_bytes, total = self.device.mem_info()
        reserve = total * self.reserve_percent // 100
        if free_bytes <= reserve or size > free_bytes - reserve:
            self._release_if_pooled()
        try:
            return self.device.alloc(size)
        except OutOfMemory as first:
            if not self._release_if_pooled():
                raise self._oom(nbytes, size, first) from first
        try:
            return self.device.alloc(size)
        except OutOfMemory as second:
            raise self._oom(nbytes, size, second) from second

    def _check_limit(self, limit: int, nbytes: int, size: int) -> None:
        """The device's cap (``mx.context.set_memory_limit`` / ``MXREF_DEVICE_MEMORY_LIMIT``): a new
        block must fit beside what the pool holds; pooled blocks are released first, as on a miss."""
        core = self._core
        if core.bytes_in_use + core.bytes_pooled + size <= limit:
            return
        self._release_if_pooled()
        if core.bytes_in_use + size > limit:
            raise MXNetError(
                f"storage: out of memory on {self.ctx}: allocating {nbytes} bytes (a {size}-byte block) "
                f"would exceed the device's memory limit of {limit} bytes, with {core.bytes_in_use} bytes "
                f"in use (peak {core.peak_bytes_in_use}). The limit comes from "
                f"mx.context.set_memory_limit or MXREF_DEVICE_MEMORY_LIMIT; place part of the model on "
                f"another device (group2ctx) or use smaller batches.")

    def _release_if_pooled(self) -> bool:
        """``release_all`` when there is something to release; say whether there was."""
        if self._core.bytes_pooled == 0:
            return False
        self._release_all_locked()
        return True

    def _release_all_locked(self) -> None:
        block_size = self._core.block_size
        for key, block in self._core.drain():
            self.device.free(block, block_size(key))

    def _oom(self, nbytes: int, size: int, cause: Optional[BaseException]) -> MXNetError:
        free_bytes, total = self.device.mem_info()
        hint = "MXREF_CPU_MEM_LIMIT" if self._host else "MXNET_GPU_MEM_POOL_RESERVE"
        return MXNetError(
            f"storage: out of memory on {self.ctx} allocating {nbytes} bytes (a {size}-byte block, "
            f"{self.strategy.kind} pool), even after releasing the pool ({cause}). Device: {free_bytes} "
            f"of {total} bytes free; pool: {self._core.stats()}. Drop arrays you no longer need, use "
            f"smaller batches, or check {hint}.")
