"""Attribute scopes: ``with mx.AttrScope(ctx_group='dev1', lr_mult='0.1'):`` tags every symbol made inside.

Some attribute keys are *hidden*: MXNet stores ``ctx_group`` as ``__ctx_group__`` (likewise
``lr_mult``, ``wd_mult``, ``force_mirroring``, ``mirror_stage``) so that operators never mistake
them for their own parameters; ``Symbol.attr('lr_mult')`` still finds them.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from typing import Dict, Optional

__all__ = ["AttrScope", "HIDDEN_KEYS", "hide_key", "current"]

HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


def hide_key(key: str) -> str:
    """``'lr_mult'`` -> ``'__lr_mult__'``; every other key is returned unchanged."""
    return f"__{key}__" if key in HIDDEN_KEYS else key


class _CurrentProperty(type):
    @property
    def current(cls) -> "AttrScope":
        return current()

    @current.setter
    def current(cls, scope: "AttrScope") -> None:
        _local.value = scope


class AttrScope(metaclass=_CurrentProperty):
    """Attributes (string values) added to every symbol created inside the ``with`` block.

    Nested scopes merge, the inner value winning; attributes given to a symbol explicitly win
    over the scope's.

    Examples
    --------
    >>> with mx.AttrScope(ctx_group='dev1'):
    ...     a = mx.sym.Variable('a')
    >>> a.attr('ctx_group')
    'dev1'
    """

    # How many subgraphs of each name the control-flow operators made (``foreach0``, ``foreach1``).
    _subgraph_names: Dict[str, int] = defaultdict(int)

    def __init__(self, **kwargs: str):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"AttrScope: attribute {key!r} must be a string, got {value!r}")
        self._attr: Dict[str, str] = dict(kwargs)
        self._old_scope: Optional[AttrScope] = None

    def get(self, attr: Optional[Dict[str, str]]) -> Dict[str, str]:
        """The scope's attributes updated with ``attr`` (the ones given at symbol creation)."""
        merged = dict(self._attr)
        if attr:
            merged.update(attr)
        return merged

    def __enter__(self) -> "AttrScope":
        self._old_scope = current()
        merged = dict(self._old_scope._attr)
        merged.update(self._attr)
        self._attr = merged
        _local.value = self
        return self

    def __exit__(self, *exc) -> None:
        _local.value = self._old_scope
        self._old_scope = None


_local = threading.local()


def current() -> AttrScope:
    """The calling thread's current scope (an empty one by default)."""
    scope = getattr(_local, "value", None)
    if scope is None:
        scope = _local.value = AttrScope()
    return scope
