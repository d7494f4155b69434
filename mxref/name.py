"""Automatic naming of symbols: ``NameManager`` (``fullyconnected0``, ``fullyconnected1``) and ``Prefix``.

Each thread has its own current manager; ``with NameManager():`` installs a fresh one (counting
restarts) and restores the previous one on exit. Gluon uses the same counters for its block prefixes.
"""
from __future__ import annotations

import threading
from typing import Dict, Optional

__all__ = ["NameManager", "Prefix", "current"]


class _CurrentProperty(type):
    """Gives ``NameManager.current`` (a class-level property) as MXNet 1.x spells it."""

    @property
    def current(cls) -> "NameManager":
        return current()

    @current.setter
    def current(cls, manager: "NameManager") -> None:
        _local.value = manager


class NameManager(metaclass=_CurrentProperty):
    """Names unnamed symbols ``<hint><n>`` with one counter per hint (the lowercased op name).

    Examples
    --------
    >>> with NameManager():
    ...     a = mx.sym.FullyConnected(data, num_hidden=2)   # fullyconnected0
    ...     b = mx.sym.FullyConnected(a, num_hidden=2)      # fullyconnected1
    """

    def __init__(self):
        self._counter: Dict[str, int] = {}
        self._old_manager: Optional[NameManager] = None

    def get(self, name: Optional[str], hint: str) -> str:
        """The name to use: ``name`` when the user gave one, else ``hint`` plus its next count."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f"{hint}{count}"

    def __enter__(self) -> "NameManager":
        self._old_manager = current()
        _local.value = self
        return self

    def __exit__(self, *exc) -> None:
        _local.value = self._old_manager
        self._old_manager = None


class Prefix(NameManager):
    """A name manager that prepends ``prefix`` to every name, given or generated.

    Examples
    --------
    >>> with mx.name.Prefix('mynet_'):
    ...     net = mx.sym.FullyConnected(data, num_hidden=10, name='fc1')
    >>> net.list_arguments()
    ['data', 'mynet_fc1_weight', 'mynet_fc1_bias']
    """

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def get(self, name: Optional[str], hint: str) -> str:
        return self._prefix + super().get(name, hint)


# NOTE: thread-local, so two threads building graphs never share (or race on) counters.
_local = threading.local()


def current() -> NameManager:
    """The calling thread's current manager (each thread starts with a fresh default one)."""
    manager = getattr(_local, "value", None)
    if manager is None:
        manager = _local.value = NameManager()
    return manager
