"""``dist_sync`` (BSP): pushes are summed per round; acknowledgements wait for every active worker."""
from __future__ import annotations

import time
from collections import deque
from typing import Dict, List, Tuple

from .base import Consistency, register_consistency


@register_consistency("dist_sync", "dist", "dist_sync_device", "dist_device_sync")
class Sync(Consistency):
    """A round closes when every active worker has pushed once: then ``updater(key, sum, stored)``
    (or ``stored = sum`` without an updater) and everyone of the round is acknowledged.

    A worker pulls only after its push was acknowledged (its engine orders that), so it sees the
    finished round; and since the next round needs the puller's own next push, the value cannot
    change while a pull's reply is sent (no snapshot needed). A worker's second push before the
    round closes waits for the next round, so a round never counts one worker twice.
    """
    snapshot_pulls = False
    capabilities = frozenset({"synchronous"})

    def __init__(self, part, workers, **options) -> None:
        super().__init__(part, workers, **options)
        self.contrib: set = set()                      # workers that pushed in the open round
        self.acks: List[Tuple[int, int]] = []          # (src, rid) waiting for the round
        self.opened = 0.0
        self.backlog: Dict[int, deque] = {}            # a worker's next-round pushes

    def push(self, msg, active: set) -> None:
        if msg.src in self.contrib:                # its next round came early: keep it in order
            self.backlog.setdefault(msg.src, deque()).append(msg)
            return
        grad = self.part.gradient(msg)
        if not self.contrib:
            self.opened = time.monotonic()
        self.part.merge(grad, first=not self.contrib)
        self.contrib.add(msg.src)
        self.acks.append((msg.src, msg.rid))
        self.progress(active)

    def progress(self, active: set) -> None:
        part = self.part
        while self.contrib and active <= self.contrib:
            acks, self.acks, self.contrib = self.acks, [], set()
            try:
                part.apply(part.merged, replace=True)
            except Exception as exc:  # noqa: BLE001 - every worker of the round must hear it
                for src, rid in acks:
                    part.error(src, rid, f"update failed: {type(exc).__name__}: {exc}")
                continue
            for src, rid in acks:
                part.reply(src, rid)
            waiting = [q.popleft() for q in self.backlog.values() if q]
            for m in waiting:
                self.push(m, active)
            if waiting:
                return           # push above already progressed the new round

    def expire(self, active: set, now: float, limit: float) -> None:
        if self.acks and now - self.opened > limit:
            part = self.part
            missing = sorted(active - self.contrib)
            text = (f"sync round of key {part.key[1]!r}: {part.names(missing)} did not push within "
                    f"MXREF_KV_TIMEOUT={limit:g}s (pushed: {part.names(sorted(self.contrib))})")
            for src, rid in self.acks:
                part.error(src, rid, text)
            self.acks, self.contrib = [], set()
