"""Bucketing strategies: how a requested size maps to a free-list key and a block size.

These are the specification; ``mxref/_ext/storage_core.pyx`` recomputes the same numbers in C.

=============  ==================================================================================
``Naive``      round up to a multiple of ``page_size`` (4096), and sizes above
               ``large_alloc_round_size`` (2 MiB) to a multiple of that; the key is the rounded
               size, so a free block is reused only for an exactly equal rounded size
               (MXNet's ``GPUPooledStorageManager``).
``Round``      power-of-two buckets ``2^k`` (at least one page) up to ``2^cutoff`` (16 MiB), then
               linear multiples of ``2^cutoff``; the key is the bucket index
               (MXNet's ``GPUPooledRoundedStorageManager``, meant for variable-length workloads).
``Unpooled``   exact size, nothing is kept: every free goes straight back to the device.
=============  ==================================================================================
"""
from __future__ import annotations

from ..base import MXNetError, env_int, env_str

__all__ = ["Strategy", "NaiveStrategy", "RoundStrategy", "UnpooledStrategy", "STRATEGIES",
           "make_strategy", "strategy_from_env"]


class Strategy:
    """Maps a request of ``nbytes`` to a free-list ``key`` and the ``block_size`` stored under it.

    ``kind`` names the strategy; ``page_size``, ``large_alloc_round_size`` and ``cutoff`` are the
    parameters (the Cython bookkeeping reads them to compute the same numbers).
    """

    kind = "Strategy"
    pooled = True

    def __init__(self, page_size: int = 4096, large_alloc_round_size: int = 2 << 20, cutoff: int = 24):
        if page_size < 1:
            raise MXNetError(f"storage: page size must be >= 1, got {page_size}")
        if large_alloc_round_size < 1:
            raise MXNetError(f"storage: large allocation round size must be >= 1, got "
                             f"{large_alloc_round_size}")
        if not 20 <= cutoff <= 34:
            raise MXNetError(f"storage: round linear cutoff must be in [20, 34], got {cutoff}")
        self.page_size = int(page_size)
        self.large_alloc_round_size = int(large_alloc_round_size)
        self.cutoff = int(cutoff)

    def bucket(self, nbytes: int) -> int:
        """The free-list key for a request of ``nbytes`` bytes."""
        raise NotImplementedError

    def block_size(self, key: int) -> int:
        """The size in bytes of every block kept under ``key``."""
        raise NotImplementedError

    def __repr__(self):
        return (f"{self.kind}(page_size={self.page_size}, "
                f"large_alloc_round_size={self.large_alloc_round_size}, cutoff={self.cutoff})")


def _round_up(x: int, multiple: int) -> int:
    return (x + multiple - 1) // multiple * multiple


class NaiveStrategy(Strategy):
    """Exact-match reuse after page rounding; the key *is* the block size."""

    kind = "Naive"

    def bucket(self, nbytes: int) -> int:
        # NOTE: a zero-byte request still gets a real block (one page), so every handle owns memory.
        size = _round_up(max(nbytes, 1), self.page_size)
        if size > self.large_alloc_round_size:
            size = _round_up(size, self.large_alloc_round_size)
        return size

    def block_size(self, key: int) -> int:
        return key


class RoundStrategy(Strategy):
    """Power-of-two buckets up to ``2^cutoff``, linear multiples of ``2^cutoff`` above."""

    kind = "Round"

    def __init__(self, page_size: int = 4096, large_alloc_round_size: int = 2 << 20, cutoff: int = 24):
        super().__init__(page_size, large_alloc_round_size, cutoff)
        # log2 of the page, rounded up: the smallest bucket (MXNet's ``min_chunk_``).
        self.min_bucket = (self.page_size - 1).bit_length()

    def bucket(self, nbytes: int) -> int:
        size = max(nbytes, 1)
        log2_ceil = (size - 1).bit_length()        # smallest k with 2^k >= size
        if log2_ceil > self.cutoff:
            unit = 1 << self.cutoff
            return (size + unit - 1) // unit - 1 + self.cutoff
        return max(log2_ceil, self.min_bucket)

    def block_size(self, key: int) -> int:
        if key <= self.cutoff:
            return 1 << key
        return (key - self.cutoff + 1) << self.cutoff


class UnpooledStrategy(Strategy):
    """No pool: the key is the exact request, and freed blocks go back to the device."""

    kind = "Unpooled"
    pooled = False

    def bucket(self, nbytes: int) -> int:
        return max(nbytes, 1)

    def block_size(self, key: int) -> int:
        return key


STRATEGIES = {cls.kind: cls for cls in (NaiveStrategy, RoundStrategy, UnpooledStrategy)}


def make_strategy(kind: str, page_size: int = 4096, large_alloc_round_size: int = 2 << 20,
                  cutoff: int = 24) -> Strategy:
    """Build a strategy by MXNet's pool-type name (``"Naive"``, ``"Round"``, ``"Unpooled"``)."""
    if kind not in STRATEGIES:
        raise MXNetError(f"storage: unknown memory pool type {kind!r}; expected one of {sorted(STRATEGIES)}")
    return STRATEGIES[kind](page_size, large_alloc_round_size, cutoff)


def strategy_from_env(prefix: str, default_kind: str) -> Strategy:
    """Read ``MXNET_<prefix>_MEM_POOL_TYPE`` and its parameters (``prefix`` is ``CPU`` or ``GPU``)."""
    kind = env_str(f"MXNET_{prefix}_MEM_POOL_TYPE", default_kind)
    return make_strategy(kind,
                         env_int(f"MXNET_{prefix}_MEM_POOL_PAGE_SIZE", 4096),
                         env_int(f"MXNET_{prefix}_MEM_LARGE_ALLOC_ROUND_SIZE", 2 << 20),
                         env_int(f"MXNET_{prefix}_MEM_POOL_ROUND_LINEAR_CUTOFF", 24))
