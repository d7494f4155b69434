"""``Handle``: one block of memory handed out by a storage pool (MXNet's ``Storage::Handle``)."""
from __future__ import annotations

__all__ = ["Handle", "FREED"]

# Marks a handle already given back, so a second free is caught instead of corrupting a free list.
FREED = "freed"


class Handle:
    """A block of memory from ``mxref.storage.alloc``.

    Attributes
    ----------
    buffer : numpy.ndarray or pycuda.driver.DeviceAllocation
        On host contexts a 1-D ``uint8`` array of exactly ``size`` bytes, 64-byte aligned (a view of
        the pooled block, which may be larger). On GPU the whole device block. ``None`` once freed.
    size : int
        Bytes requested.
    ctx : Context
        The context whose pool owns the memory.
    """

    __slots__ = ("buffer", "size", "ctx", "_block", "_key", "_pool")

    def __init__(self, buffer, size: int, ctx):
        self.buffer = buffer
        self.size = size
        self.ctx = ctx
        # Set only by the pool that hands the handle out; a handle built by hand is foreign.
        self._block = None
        self._key = None
        self._pool = None

    def __repr__(self):
        state = "freed" if self._pool is FREED else ("live" if self._pool is not None else "foreign")
        return f"<Handle {self.size} bytes on {self.ctx} ({state})>"
