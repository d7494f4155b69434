"""Pooled storage per context: ``alloc``/``free`` of raw byte buffers, ``release_all``, ``stats``.

(Placeholder implementation: unpooled. Replaced by the pooled managers.)
"""
from __future__ import annotations

import numpy as np

__all__ = ["Handle", "alloc", "free", "direct_free", "release_all", "stats"]


class Handle:
    """A block of memory: ``buffer`` is a 1-D ``uint8`` numpy array of at least ``size`` bytes."""

    __slots__ = ("buffer", "size", "ctx")

    def __init__(self, buffer, size, ctx):
        self.buffer = buffer
        self.size = size
        self.ctx = ctx


def alloc(nbytes: int, ctx) -> Handle:
    return Handle(np.empty(max(int(nbytes), 1), dtype=np.uint8), int(nbytes), ctx)


def free(handle: Handle) -> None:
    handle.buffer = None


def direct_free(handle: Handle) -> None:
    handle.buffer = None


def release_all(ctx=None) -> None:
    pass


def stats(ctx=None) -> dict:
    return {}
