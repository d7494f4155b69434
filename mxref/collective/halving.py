"""Latency-optimal allreduce over point-to-point messages: recursive doubling and Rabenseifner's
halving-doubling, for any world size.

Both work on a power-of-two *core* of ``p`` ranks. With ``W = p + rem`` ranks, the first
``2·rem`` ranks pair up first: each even one hands its buffer to its odd neighbour and waits, the
odd one folds it in and joins the core; afterwards it sends the result back (MPICH's scheme)::

    W = 6, p = 4, rem = 2     ranks 0 1 2 3 4 5
                              0 -> 1, 2 -> 3      (fold, then 0 and 2 wait)
    core ranks                   0   1   2 3      (ranks 1, 3, 4, 5)

**Recursive doubling** (small buffers): log2(p) steps; at step k core rank c swaps its whole
buffer with core rank ``c ^ 2^k`` and folds. log2(p) latencies, the whole buffer each step.

**Rabenseifner** (medium buffers): a reduce-scatter by recursive halving (step k: keep one half
of the current range, send the other half to ``c ^ p/2^(k+1)``, fold what comes back), after
which core rank c owns segment c fully reduced; then an allgather by recursive doubling.
2·log2(p) latencies and 2(p-1)/p of the buffer per rank, like the ring, with fewer latencies.

Same bits on every rank: at each fold the partial result of the lower ranks goes first
(``ufunc(lower, upper)``), so every rank evaluates the same expression in the same order (for
max/min this matters even without rounding: ``maximum(0.0, -0.0)`` keeps its first argument).
Recursive doubling computes each element on every rank that way; Rabenseifner computes each
segment once and copies it.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional, Tuple

import numpy as np

from .algorithms import segment_bounds
from .base import Link


@lru_cache(maxsize=256)
def pow2_core(rank: int, world: int) -> Tuple[int, int, int]:
    """``(p, rem, core)``: the largest power of two ``p <= world``, ``rem = world - p``, and this
    rank's index in the core, or -1 for an even rank below ``2·rem`` (it only hands its buffer on)."""
    p = 1 << (world.bit_length() - 1)
    rem = world - p
    if rank < 2 * rem:
        return p, rem, (rank // 2 if rank % 2 else -1)
    return p, rem, rank - rem


def core_rank(core: int, rem: int) -> int:
    """The rank of core index ``core`` (the inverse of ``pow2_core``)."""
    return 2 * core + 1 if core < rem else core + rem


@lru_cache(maxsize=256)
def doubling_schedule(rank: int, world: int) -> Tuple[Tuple[int, bool], ...]:
    """Recursive doubling's steps for ``rank``: ``(peer, peer_first)``, where ``peer_first`` says the
    peer's partial result is the left operand of the fold. (Cached: small calls pay for every
    microsecond.)"""
    p, rem, core = pow2_core(rank, world)
    if core < 0:
        return ()
    steps, mask = [], 1
    while mask < p:
        other = core ^ mask
        steps.append((core_rank(other, rem), other < core))
        mask <<= 1
    return tuple(steps)


def _fold(ufunc: np.ufunc, mine: np.ndarray, theirs: np.ndarray, theirs_first: bool) -> None:
    if theirs_first:
        ufunc(theirs, mine, out=mine)
    else:
        ufunc(mine, theirs, out=mine)


def _enter_core(link: Link, buf: np.ndarray, ufunc: np.ufunc, tmp: np.ndarray) -> bool:
    """The pre-step of a non-power-of-two world; False for a rank that then only waits for the result."""
    rank = link.rank
    p, rem, core = pow2_core(rank, link.world_size)
    if rank >= 2 * rem:
        return True
    if core < 0:
        link.send(rank + 1, buf)
        link.recv(rank + 1, buf)
        return False
    incoming = tmp[:buf.size]
    link.recv(rank - 1, incoming)
    ufunc(incoming, buf, out=buf)       # the even (lower) rank's buffer goes first
    return True


def _leave_core(link: Link, buf: np.ndarray) -> None:
    p, rem, _ = pow2_core(link.rank, link.world_size)
    if link.rank < 2 * rem:
        link.send(link.rank - 1, buf)


def recursive_doubling(link: Link, buf: np.ndarray, ufunc: np.ufunc,
                       tmp: Optional[np.ndarray] = None) -> None:
    """Allreduce ``buf`` in place with ``ufunc`` in log2(p) whole-buffer exchanges (+2 off the core);
    ``tmp``: a scratch array of ``buf``'s size and dtype (a plan keeps one; else one is made)."""
    if link.world_size == 1:
        return
    if tmp is None:
        tmp = np.empty_like(buf)
    if not _enter_core(link, buf, ufunc, tmp):
        return
    for peer, peer_first in doubling_schedule(link.rank, link.world_size):
        link.sendrecv(peer, buf, peer, tmp)
        _fold(ufunc, buf, tmp, peer_first)
    _leave_core(link, buf)


def rabenseifner(link: Link, buf: np.ndarray, ufunc: np.ufunc) -> None:
    """Allreduce ``buf`` in place: reduce-scatter by recursive halving, allgather by recursive doubling."""
    world = link.world_size
    if world == 1:
        return
    p, rem, core = pow2_core(link.rank, world)
    b = segment_bounds(buf.size, p)
    # The lower half is the longer one (segment_bounds puts the extra elements first).
    tmp = np.empty(max(buf.size if link.rank < 2 * rem else 0, b[p // 2]), buf.dtype)
    if not _enter_core(link, buf, ufunc, tmp):
        return
    lo, hi, mask = 0, p, p // 2
    while mask:
        other = core ^ mask
        peer, mid = core_rank(other, rem), lo + mask
        (klo, khi), (glo, ghi) = ((mid, hi), (lo, mid)) if core & mask else ((lo, mid), (mid, hi))
        kept = buf[b[klo]:b[khi]]
        incoming = tmp[:kept.size]
        link.sendrecv(peer, buf[b[glo]:b[ghi]], peer, incoming)
        _fold(ufunc, kept, incoming, other < core)
        lo, hi, mask = klo, khi, mask >> 1
    mask = 1
    while mask < p:            # [lo, hi) is aligned to ``mask`` segments: the peer's block is lo ^ mask
        peer = core_rank(core ^ mask, rem)
        plo = lo ^ mask
        link.sendrecv(peer, buf[b[lo]:b[hi]], peer, buf[b[plo]:b[plo + mask]])
        lo, hi, mask = min(lo, plo), max(hi, plo + mask), mask << 1
    _leave_core(link, buf)
