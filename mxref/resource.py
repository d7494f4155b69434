"""Resources — random generators and temp space — each owned by an engine variable.

An operator that declares ``resources=['random']`` gets the context's generator and adds its
variable to the op's *mutable* variables, so two ops drawing random numbers are serialised in push
order and results are reproducible under any engine (MXNet's resource tags, paper §3).
"""
from __future__ import annotations

import threading
from typing import Dict, List, Tuple

import numpy as np

from . import engine as _engine
from .base import env_int

__all__ = ["Resource", "request", "seed", "DEFAULT_SEED"]

DEFAULT_SEED = 0


class Resource:
    """One resource instance: ``kind`` is 'random' or 'temp_space'; ``var`` orders its use."""

    __slots__ = ("kind", "ctx", "var", "generator", "_space")

    def __init__(self, kind: str, ctx, seed_value: int = DEFAULT_SEED):
        self.kind = kind
        self.ctx = ctx
        self.var = _engine.get().new_variable()
        self.generator = np.random.default_rng(_mix_seed(seed_value, ctx)) if kind == "random" else None
        self._space = None

    def get_space(self, nbytes: int) -> np.ndarray:
        """Scratch bytes; the buffer grows when asked for more and never shrinks (as MXNet's)."""
        if self._space is None or self._space.nbytes < nbytes:
            self._space = np.empty(max(int(nbytes), 1), dtype=np.uint8)
        return self._space[:nbytes]


def _mix_seed(seed_value: int, ctx, per_device: bool = True) -> int:
    # Different devices get different streams from one user seed, as MXNet seeds per device; a
    # seed given for one context (``seed(s, ctx=...)``) leaves the device id out, so every device
    # of a kind seeded that way draws the same numbers (MXNet's MXRandomSeedContext).
    device_id = ctx.device_id if per_device else 0
    return (int(seed_value) * 1000003 + ctx.device_typeid * 131 + device_id) & 0xFFFFFFFF


_lock = threading.Lock()
_resources: Dict[Tuple, List[Resource]] = {}
_round_robin: Dict[Tuple, int] = {}
_seed_value = DEFAULT_SEED


def request(ctx, kind: str) -> Resource:
    """The resource of ``kind`` for ``ctx``; temp space rotates over ``MXNET_CPU_TEMP_COPY`` copies."""
    key = (ctx.device_typeid, ctx.device_id, kind)
    pool = _resources.get(key)
    if pool is None:
        with _lock:
            pool = _resources.get(key)
            if pool is None:
                copies = env_int("MXNET_CPU_TEMP_COPY", 4) if kind == "temp_space" else 1
                pool = _resources[key] = [Resource(kind, ctx, _seed_value) for _ in range(copies)]
    if len(pool) == 1:
        return pool[0]
    with _lock:
        i = _round_robin.get(key, 0)
        _round_robin[key] = (i + 1) % len(pool)
    return pool[i]


def seed(seed_value: int, ctx="all") -> None:
    """Reseed the random generators (of one context, or ``"all"``/``None``: every context). Pushed as
    a write of each generator's variable, so it takes effect after every random op already pushed
    and before every later one. Seeding all contexts gives each device its own stream; seeding one
    context gives the stream that any device of its kind gets from that seed."""
    global _seed_value
    if isinstance(seed_value, bool) or not isinstance(seed_value, (int, np.integer)):
        raise ValueError(f"seed_state must be int, got {type(seed_value).__name__}")
    seed_value = int(seed_value)
    if isinstance(ctx, str):
        if ctx != "all":
            raise ValueError(f"ctx must be a Context or 'all', got {ctx!r}")
        ctx = None
    per_device = ctx is None
    eng = _engine.get()
    with _lock:
        if ctx is None:
            _seed_value = seed_value
        targets = [r for (tid, did, kind), pool in _resources.items() if kind == "random"
                   for r in pool if ctx is None or (tid, did) == (ctx.device_typeid, ctx.device_id)]
    for res in targets:
        def reseed(rctx, res=res):
            res.generator = np.random.default_rng(_mix_seed(seed_value, res.ctx, per_device))
        eng.push_sync(reseed, res.ctx, (), (res.var,), name="RandomSeed")
    if ctx is not None and not targets:
        request(ctx, "random")  # create it now, seeded from the global value ...
        res = request(ctx, "random")
        res.generator = np.random.default_rng(_mix_seed(seed_value, ctx, False))  # ... then this seed


@_engine.on_switch
def _reset_for_engine_switch() -> None:
    """Forget resources when the engine changes: their variables belong to the old engine."""
    with _lock:
        _resources.clear()
        _round_robin.clear()
