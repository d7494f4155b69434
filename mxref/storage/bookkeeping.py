"""Pool bookkeeping in pure Python: free lists by bucket and the counters (twin of ``_ext/storage_core``).

``PoolCore`` knows nothing about devices, threads or handles: the pooled manager (``pool.py``)
calls it under its lock and does the device work itself. The Cython twin must behave identically;
``tests/storage/test_bookkeeping.py`` drives both with the same random sequences.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .strategy import Strategy

__all__ = ["PoolCore", "STAT_KEYS"]

# The counters every pool reports, in this order (``storage.stats()``).
STAT_KEYS = ("bytes_in_use", "bytes_pooled", "peak_bytes_in_use", "num_alloc", "num_free",
             "num_pool_hits", "num_release_all")


class PoolCore:
    """Free lists keyed by bucket, plus usage counters. Not thread-safe: the caller holds a lock.

    A block's life: ``take`` (a pool hit) or ``track_new`` (a fresh device block) hands it out;
    ``give`` returns it to its free list (``False`` for an unpooled strategy: the caller must free
    it on the device); ``forget`` drops a live block the caller freed on the device directly;
    ``drain`` empties every free list for ``release_all``.
    """

    def __init__(self, strategy: Strategy):
        self.strategy = strategy
        self._bucket = strategy.bucket
        self._block_size = strategy.block_size
        self._pooled = strategy.pooled
        self._free: Dict[int, List[Any]] = {}
        self.bytes_in_use = 0
        self.bytes_pooled = 0
        self.peak_bytes_in_use = 0
        self.num_alloc = 0
        self.num_free = 0
        self.num_pool_hits = 0
        self.num_release_all = 0

    def bucket(self, nbytes: int) -> int:
        """The free-list key of a request of ``nbytes``."""
        return self._bucket(nbytes)

    def block_size(self, key: int) -> int:
        """Bytes in each block kept under ``key``."""
        return self._block_size(key)

    def take(self, key: int) -> Optional[Any]:
        """Pop the most recently freed block of bucket ``key`` (a hit), or ``None`` (a miss)."""
        blocks = self._free.get(key)
        if not blocks:
            return None
        # LIFO: the block freed last is the most likely to still be in cache.
        block = blocks.pop()
        size = self._block_size(key)
        self.bytes_pooled -= size
        self.num_pool_hits += 1
        self._hand_out(size)
        return block

    def track_new(self, key: int) -> None:
        """Count a block of bucket ``key`` that the caller just got from the device."""
        self._hand_out(self._block_size(key))

    def _hand_out(self, size: int) -> None:
        self.num_alloc += 1
        self.bytes_in_use += size
        if self.bytes_in_use > self.peak_bytes_in_use:
            self.peak_bytes_in_use = self.bytes_in_use

    def give(self, key: int, block: Any) -> bool:
        """Return a live block to its free list; ``False`` means "not pooled, free it yourself"."""
        size = self._block_size(key)
        self.num_free += 1
        self.bytes_in_use -= size
        if not self._pooled:
            return False
        blocks = self._free.get(key)
        if blocks is None:
            blocks = self._free[key] = []
        blocks.append(block)
        self.bytes_pooled += size
        return True

    def forget(self, key: int) -> None:
        """Count a live block of bucket ``key`` that the caller freed on the device (``direct_free``)."""
        self.num_free += 1
        self.bytes_in_use -= self._block_size(key)

    def drain(self) -> List[Tuple[int, Any]]:
        """Empty every free list; return the ``(key, block)`` pairs for the caller to free."""
        out = [(key, block) for key, blocks in self._free.items() for block in blocks]
        self._free.clear()
        self.bytes_pooled = 0
        self.num_release_all += 1
        return out

    def free_counts(self) -> Dict[int, int]:
        """How many blocks wait in each non-empty free list (for tests and debugging)."""
        return {key: len(blocks) for key, blocks in self._free.items() if blocks}

    def stats(self) -> Dict[str, int]:
        """The counters named in ``STAT_KEYS``."""
        return {name: getattr(self, name) for name in STAT_KEYS}
