"""The mock engine: the robust engine plus deaths injected at chosen calls, like Rabit's ``mock=``."""
from __future__ import annotations

import os
import signal
from typing import Any

from .base import register
from .robust_engine import CHECKPOINT, COLLECTIVE, RobustEngine


class MockKill(BaseException):
    """Raised by the mock engine in thread worlds to stand for a killed process."""


@register("mock")
class MockEngine(RobustEngine):
    """The robust engine plus failures injected at chosen calls, like Rabit's ``mock=`` option.

    Parameters
    ----------
    mock : list of (rank, version, seqno[, ndeath]) or str
        Die when this rank is about to make call ``seqno`` (a checkpoint counts as the call after
        the version's collectives) of ``version``, on attempt ``ndeath`` (default 0, so a restarted
        process does not die again). A string ``"r,v,s,n;r,v,s,n"`` or ``$MXREF_MOCK`` also work.
        In a process the death is a real ``SIGKILL``; in a thread world it is ``MockKill``.
    """

    def __init__(self, mock: Any = None, **kwargs: Any) -> None:
        mock = mock if mock is not None else os.environ.get("MXREF_MOCK", "")
        if isinstance(mock, str):
            mock = [tuple(int(x) for x in item.split(",")) for item in mock.split(";") if item.strip()]
        self.kill_points = {(p[0], p[1], p[2], p[3] if len(p) > 3 else 0) for p in mock}
        self._in_thread = kwargs.get("world") is not None
        super().__init__(**kwargs)

    def _run(self, action: int, meta: tuple, execute) -> Any:
        if action in (COLLECTIVE, CHECKPOINT) and \
                (self.rank, self.version, self.seqno, self.attempt) in self.kill_points:
            if self._in_thread:
                raise MockKill(f"mock: rank {self.rank} killed at version {self.version} seqno {self.seqno}")
            os.kill(os.getpid(), signal.SIGKILL)
        return super()._run(action, meta, execute)
