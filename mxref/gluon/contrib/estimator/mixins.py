"""The six event mixins (TrainBegin ... BatchEnd) an Estimator calls, and the handler list check.

A handler subclasses the mixins of the events it wants; the Estimator sorts handlers by their
``priority`` attribute (lower first, default 0) and calls, at each event, only the handlers that
subclass that event's mixin. ``epoch_end`` and ``batch_end`` return True to stop training.
"""
from __future__ import annotations

from typing import List

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd"]


class EventHandler:
    """Base of every event handler (the mixins below)."""


def _check_event_handlers(handlers) -> List[EventHandler]:
    """``handlers`` as a new list of EventHandler; one handler alone is wrapped."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    if not all(isinstance(handler, EventHandler) for handler in handlers):
        raise ValueError(f"handlers must be an EventHandler or a list of EventHandler, got: {handlers}")
    return handlers


class TrainBegin(EventHandler):
    def train_begin(self, estimator, *args, **kwargs):
        pass


class TrainEnd(EventHandler):
    def train_end(self, estimator, *args, **kwargs):
        pass


class EpochBegin(EventHandler):
    def epoch_begin(self, estimator, *args, **kwargs):
        pass


class EpochEnd(EventHandler):
    def epoch_end(self, estimator, *args, **kwargs):
        """Return True to stop training after this epoch."""
        return False


class BatchBegin(EventHandler):
    def batch_begin(self, estimator, *args, **kwargs):
        pass


class BatchEnd(EventHandler):
    def batch_end(self, estimator, *args, **kwargs):
        """Return True to end the epoch after this batch (``fit`` then runs the epoch-end events)."""
        return False
