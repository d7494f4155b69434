"""``dist_ssp`` (SSP, bounded delay ``tau``): updates on arrival; no worker runs ``tau`` pushes ahead."""
from __future__ import annotations

import time
from typing import List, Tuple

from ....base import MXNetError, env_int
from .base import Consistency, register_consistency

DEFAULT_STALENESS = 2


@register_consistency("dist_ssp")
class SSP(Consistency):
    """Each push is applied on arrival and counts one clock of its worker; it is acknowledged
    only once its clock is within ``tau`` of the slowest active worker's. The worker cannot push
    or pull the key meanwhile, so no pull sees a value missing more than ``tau`` clocks of anyone.

    ``tau = 0`` is sync with updates applied one push at a time; a huge ``tau`` is async. Clocks
    are per key part (each key's pushes), which is what a training loop pushing every key once per
    batch means by "iteration".
    """
    needs_updater = True

    def __init__(self, part, workers, tau: int = DEFAULT_STALENESS) -> None:
        super().__init__(part, workers)
        self.tau = tau
        self.clock = dict.fromkeys(self.workers, 0)           # pushes applied per worker
        self.held: List[Tuple[int, int, int, float]] = []     # (clock, src, rid, since)

    @classmethod
    def options(cls, name: str) -> dict:
        """``tau`` from ``'dist_ssp:4'``, else ``MXREF_KV_STALENESS`` (default 2)."""
        _, _, tail = name.partition(":")
        try:
            tau = int(tail) if tail else env_int("MXREF_KV_STALENESS", DEFAULT_STALENESS)
        except ValueError:
            raise MXNetError(f"kvstore.create: bad staleness in {name!r}; use 'dist_ssp:4'") from None
        if tau < 0:
            raise MXNetError(f"kvstore.create: staleness must be >= 0, got {tau} in {name!r}")
        return {"tau": tau}

    def push(self, msg, active: set) -> None:
        self.part.apply(self.part.gradient(msg), replace=False)
        self.clock[msg.src] += 1
        self.held.append((self.clock[msg.src], msg.src, msg.rid, time.monotonic()))
        self.progress(active)

    def release(self, entry, slowest) -> bool:
        """Whether a held acknowledgement may go out now."""
        return slowest is None or entry[0] - slowest <= self.tau

    def progress(self, active: set) -> None:
        slowest = min((self.clock[w] for w in active), default=None)
        keep = []
        for entry in self.held:
            if self.release(entry, slowest):
                self.part.reply(entry[1], entry[2])
            else:
                keep.append(entry)
        self.held = keep

    def expire(self, active: set, now: float, limit: float) -> None:
        if self.held and now - min(h[3] for h in self.held) > limit:
            part = self.part
            slow = sorted(w for w in active if self.clock[w] == min(self.clock[a] for a in active))
            text = (f"bounded delay on key {part.key[1]!r} (tau={self.tau}): {part.names(slow)} "
                    f"did not push within MXREF_KV_TIMEOUT={limit:g}s")
            for _, src, rid, _ in self.held:
                part.error(src, rid, text)
            self.held = []
