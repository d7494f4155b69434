"""``dist_async`` (ASP): each push is applied by the server's optimizer on arrival, then acknowledged."""
from __future__ import annotations

from .base import Consistency, register_consistency


@register_consistency("dist_async", "dist_async_device", "dist_device_async")
class Async(Consistency):
    """No waiting at all: a pull sees the latest value, whatever the other workers did.

    (The file is not called ``async.py``: ``async`` is a Python keyword and could not be imported.)
    """
    needs_updater = True
    capabilities = frozenset({"async"})

    def push(self, msg, active: set) -> None:
        self.part.apply(self.part.gradient(msg), replace=False)
        self.part.reply(msg.src, msg.rid)
