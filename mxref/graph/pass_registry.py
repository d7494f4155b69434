"""The graph-pass registry: each pass is ``graph -> graph`` and declares what it requires and provides.

A pass is registered with the graph attributes it *requires* and *provides* (nnvm's
``NNVM_REGISTER_PASS``); ``apply_pass`` checks both, so running passes out of order is an error
that names the missing attribute instead of a ``KeyError`` deep inside the pass.
"""
from __future__ import annotations

from typing import Callable, Dict, Sequence

from ..base import MXNetError
from .indexed import Graph

__all__ = ["PassInfo", "register_pass", "apply_pass", "apply_passes", "list_passes"]


class PassInfo:
    __slots__ = ("name", "fn", "requires", "provides", "doc")

    def __init__(self, name, fn, requires, provides, doc):
        self.name, self.fn, self.requires, self.provides, self.doc = name, fn, requires, provides, doc


_PASSES: Dict[str, PassInfo] = {}


def register_pass(name: str, requires: Sequence[str] = (), provides: Sequence[str] = ()) -> Callable:
    """Decorator: ``@register_pass("plan_memory", requires=["shape", "dtype"], provides=["storage_id"])``."""
    def deco(fn):
        if name in _PASSES:
            raise MXNetError(f"graph pass {name} is already registered")
        _PASSES[name] = PassInfo(name, fn, tuple(requires), tuple(provides), fn.__doc__ or "")
        return fn
    return deco


def apply_pass(graph: Graph, name: str, **kwargs) -> Graph:
    """Run one pass after checking the attributes it requires are present."""
    if name not in _PASSES:
        raise MXNetError(f"unknown graph pass {name!r}; registered: {sorted(_PASSES)}")
    info = _PASSES[name]
    missing = [a for a in info.requires if a not in graph.attrs]
    if missing:
        raise MXNetError(f"graph pass {name} requires attributes {missing}; run the passes that "
                         f"provide them first")
    out = info.fn(graph, **kwargs)
    for a in info.provides:
        if a not in out.attrs:
            raise MXNetError(f"graph pass {name} did not provide attribute {a!r}")
    return out


def apply_passes(graph: Graph, names: Sequence[str], **kwargs) -> Graph:
    for name in names:
        graph = apply_pass(graph, name, **kwargs)
    return graph


def list_passes() -> Dict[str, PassInfo]:
    return dict(_PASSES)
