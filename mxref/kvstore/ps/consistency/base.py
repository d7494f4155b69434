"""The consistency-model interface of the parameter server and the registry of models by name.

A consistency model decides, for one key part on one server, when a worker's push is applied
to the stored value and when the push is acknowledged. The worker's engine will not run that
worker's next push or pull of the key before the acknowledgement, so holding acknowledgements
back is how a model bounds what a pull can see. Adding a model is one file::

    @register_consistency("dist_mine")
    class Mine(Consistency):
        def push(self, msg, active): ...

after which ``mx.kv.create('dist_mine')`` makes worker stores that use it
(``docs/howto/add_a_consistency_model.md`` walks through one).
"""
from __future__ import annotations

from typing import Callable, ClassVar, Dict, Iterable, Optional, Sequence, Tuple, Type

import numpy as np

from ....base import MXNetError

__all__ = ["Consistency", "PartContext", "register_consistency", "get_consistency",
           "consistency_names", "model_for_store"]


class PartContext:
    """What a model may ask of the server about its key part (implemented by ``server._KeyPart``).

    Attributes: ``key`` (``(store id, user key, part index)``), ``merged`` (the round's sum built
    by ``merge``: an array of the part's shape for dense keys, ``(ids, rows)`` for row_sparse ones).
    """
    key: tuple
    merged: np.ndarray

    def gradient(self, msg) -> np.ndarray:
        """The push's data as an array of the part's shape (2-bit codes already dequantized)."""
        raise NotImplementedError

    def merge(self, grad, first: bool) -> None:
        """Add ``grad`` (what ``gradient`` returned) into the round's sum, ``merged``; ``first``
        starts a new sum. Dense parts add arrays; row_sparse parts sum rows by id."""
        raise NotImplementedError

    def apply(self, grad: np.ndarray, replace: bool) -> None:
        """``updater(key, grad, stored)``; without an updater ``stored = grad`` if ``replace``,
        else ``ValueError`` (a model that applies single pushes needs an optimizer)."""
        raise NotImplementedError

    def reply(self, src: int, rid: int) -> None:
        """Acknowledge request ``rid`` of worker ``src`` (its MPI / link rank)."""
        raise NotImplementedError

    def error(self, src: int, rid: int, text: str) -> None:
        """Fail request ``rid`` of ``src``; the worker raises ``text`` at its next wait."""
        raise NotImplementedError

    def names(self, ranks: Iterable[int]) -> str:
        """``'worker 0 (MPI rank 1), worker 2 (MPI rank 3)'``: how errors name workers."""
        raise NotImplementedError


class Consistency:
    """One key part's consistency model; the server makes one instance per part at ``INIT``.

    Every method runs on the part's update thread, one message at a time, so a model keeps
    plain attributes without locks. ``active`` is the set of workers (link ranks) that have not
    sent ``DONE``: a model must count only them, so workers with unequal numbers of batches
    all finish.

    Class attributes
    ----------------
    name : str
        The registry name (``'dist_sync'``); ``aliases`` are other store type names for it.
    needs_updater : bool
        Workers refuse pushes until ``set_optimizer`` was called (a push applied on its own must
        go through an optimizer; replacing the value by one worker's gradient means nothing).
    snapshot_pulls : bool
        The value may change while a pull's reply is being sent, so pulls copy it first.
    capabilities : frozenset
        What worker stores using this model add to ``is_capable`` (``KVStore.CAPABILITIES``):
        ``'synchronous'`` (each update sums one push of every worker), ``'async'``.
    """
    name: ClassVar[str] = ""
    aliases: ClassVar[Tuple[str, ...]] = ()
    needs_updater: ClassVar[bool] = False
    snapshot_pulls: ClassVar[bool] = True
    capabilities: ClassVar[frozenset] = frozenset()

    def __init__(self, part: PartContext, workers: Sequence[int], **options) -> None:
        if options:
            raise MXNetError(f"consistency {self.name}: unknown options {sorted(options)}")
        self.part = part
        self.workers = list(workers)

    @classmethod
    def options(cls, name: str) -> dict:
        """The options a store type name carries after ``':'`` (``'dist_ssp:4'`` -> ``{'tau': 4}``),
        sent to the servers with each key's ``INIT``. The default takes none."""
        if ":" in name:
            raise MXNetError(f"kvstore.create: {cls.name} takes no options, got {name!r}")
        return {}

    def push(self, msg, active: set) -> None:
        """A push from worker ``msg.src`` (request ``msg.rid``) arrived."""
        raise NotImplementedError

    def progress(self, active: set) -> None:
        """Something changed (a worker finished): release what can be released now."""

    def expire(self, active: set, now: float, limit: float) -> None:
        """Fail what has waited longer than ``limit`` seconds, naming the workers it waits for."""


_MODELS: Dict[str, Type[Consistency]] = {}
_STORE_NAMES: Dict[str, str] = {}         # store type name (aliases too) -> model name


def register_consistency(name: str, *aliases: str) -> Callable[[Type[Consistency]], Type[Consistency]]:
    """Class decorator: make a model available as ``mx.kv.create(name)`` (and each alias)."""
    def wrap(cls: Type[Consistency]) -> Type[Consistency]:
        if not (isinstance(cls, type) and issubclass(cls, Consistency)):
            raise MXNetError(f"register_consistency: expected a Consistency subclass, got {cls!r}")
        cls.name, cls.aliases = name.lower(), tuple(a.lower() for a in aliases)
        _MODELS[cls.name] = cls
        for n in (cls.name, *cls.aliases):
            _STORE_NAMES[n] = cls.name
        return cls
    return wrap


def get_consistency(name: str) -> Type[Consistency]:
    """The model registered as ``name`` (what an ``INIT`` message names)."""
    cls = _MODELS.get(name)
    if cls is None:
        raise MXNetError(f"kvstore: unknown consistency model {name!r}; registered: {consistency_names()}")
    return cls


def model_for_store(type_name: str) -> Optional[Type[Consistency]]:
    """The model a store type name means (``'dist_ssp:3'`` -> the ssp model), or None."""
    model = _STORE_NAMES.get(type_name.lower().partition(":")[0])
    return None if model is None else _MODELS[model]


def consistency_names() -> list:
    return sorted(_MODELS)
