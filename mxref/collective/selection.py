"""Which allreduce algorithm runs for a buffer of a given size: the measured tables, their override
(``MXREF_COLLECTIVE_ALLREDUCE``) and the dispatch to the algorithm.

A table is a list of rows ``algorithm:up_to_bytes`` and a last row without a bound, written as
one string, e.g. ``doubling:65536,rabenseifner:1048576,ring``: buffers of at most 64 KiB use
recursive doubling, up to 1 MiB Rabenseifner, larger ones the ring. A single name forces one
algorithm for every size. The choice depends only on the byte size, the world size and the
table, so every rank that sees the same environment picks the same algorithm (the agreement
check verifies it).

The default tables were measured once per world size on loopback with
``benchmarks/bench_allreduce.py --tune`` (every algorithm at every size from 4 KiB to 64 MiB,
medians of interleaved rounds; the fastest wins, and a row boundary sits at the last size an
algorithm won; a single size won by another algorithm by less than 15% goes to its neighbours'
algorithm, and where all are within 15% (W=2 above 64 KiB, where the ring and Rabenseifner send
the same messages) the one sending the fewest bytes is kept; see ``docs/benchmarks.md``,
"## Collective"). A world size without a measured table uses the table of the largest measured
world size below it.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..base import MXNetError
from .algorithms import ring_allreduce, tree_allreduce
from .base import Link
from .halving import rabenseifner, recursive_doubling

ALGORITHMS = ("doubling", "rabenseifner", "ring", "tree")
# Measured with ``benchmarks/bench_allreduce.py --worlds 2 3 4 --tune`` on a 2-core machine over
# loopback, W=2 at load 8-14 and W=3/W=4 again on the quiet machine (load < 2; the earlier loaded
# runs had doubling win up to 4 MiB, where every message cost a scheduler wake-up). W=3 and W=4
# still oversubscribe the 2 cores; Rabenseifner and the ring take over from 256 KiB / 1 MiB.
# W=4 at 1 MiB: Rabenseifner, whose lead over recursive doubling survives its separate check round
# on the quiet machine (four side-by-side pairs, 1.04-1.08x MPI's speed against 0.89-0.93x for
# the doubling that carries the check; under load 7 an earlier pair had gone the other way,
# 0.83x against 1.49x, when every extra message round costs a scheduler wake-up).
DEFAULT_TABLES: Dict[int, str] = {
    2: "doubling:65536,ring",
    3: "doubling:65536,rabenseifner:262144,ring",
    4: "doubling:262144,rabenseifner:1048576,ring",
}
# The largest payload that may ride with the agreement check's messages (agreement.py): the
# fused check covers every size a table gives recursive doubling, up to this bound (a table of
# ``MXREF_COLLECTIVE_ALLREDUCE`` may take doubling that far). An engine keeps two message buffers
# of its table's doubling bound (at most this) plus 80 bytes.
FUSED_MAX_BYTES = 1 << 20


class AlgorithmTable:
    """Rows ``(up_to_bytes or None, algorithm)``; or the older rule, ``ring_mincount`` elements:
    the ring for longer buffers (and at least W elements), the tree for the others."""

    def __init__(self, rows: List[Tuple[Optional[int], str]], source: str,
                 ring_mincount: Optional[int] = None) -> None:
        self.rows, self.source, self.ring_mincount = rows, source, ring_mincount

    @classmethod
    def parse(cls, text: str, source: str) -> "AlgorithmTable":
        rows: List[Tuple[Optional[int], str]] = []
        parts = [p.strip() for p in text.split(",") if p.strip()]
        for i, part in enumerate(parts):
            name, _, limit = part.partition(":")
            last = i == len(parts) - 1
            if name not in ALGORITHMS or (limit == "") != last:
                raise MXNetError(f"{source}: cannot read allreduce table {text!r}: write rows "
                                 f"'algorithm:up_to_bytes', the last without a bound, algorithms "
                                 f"from {', '.join(ALGORITHMS)} (e.g. 'doubling:65536,ring')")
            try:
                rows.append((None if last else int(limit), name))
            except ValueError:
                raise MXNetError(f"{source}: {limit!r} in {text!r} is not a byte count") from None
        if not rows:
            raise MXNetError(f"{source}: the allreduce table is empty")
        return cls(rows, source)

    def choose(self, nbytes: int, count: int, world: int) -> str:
        """The algorithm for a buffer of ``nbytes`` bytes holding ``count`` elements."""
        if self.ring_mincount is not None:
            return "ring" if count > self.ring_mincount and count >= world else "tree"
        for limit, name in self.rows:
            if limit is None or nbytes <= limit:
                return name
        return self.rows[-1][1]

    def fused_capacity(self) -> int:
        """The largest buffer recursive doubling takes, capped at ``FUSED_MAX_BYTES``."""
        if self.ring_mincount is not None:
            return 0
        limit = 0
        for bound, name in self.rows:
            if name == "doubling":
                limit = FUSED_MAX_BYTES if bound is None else max(limit, bound)
        return min(limit, FUSED_MAX_BYTES)

    def __str__(self) -> str:
        if self.ring_mincount is not None:
            return f"tree up to {self.ring_mincount} elements, ring above"
        return ",".join(name if limit is None else f"{name}:{limit}" for limit, name in self.rows)


def table_for(world: int, spec: Optional[str] = None, ring_mincount: Optional[int] = None) -> AlgorithmTable:
    """The table in force: ``spec``, else ``$MXREF_COLLECTIVE_ALLREDUCE``, else the older
    ``ring_mincount`` rule when given (argument or ``$MXREF_COLLECTIVE_RING_MINCOUNT``), else the
    measured default for ``world`` ranks."""
    if spec:
        return AlgorithmTable.parse(spec, "allreduce table")
    env = os.environ.get("MXREF_COLLECTIVE_ALLREDUCE")
    if env:
        return AlgorithmTable.parse(env, "MXREF_COLLECTIVE_ALLREDUCE")
    if ring_mincount is None and os.environ.get("MXREF_COLLECTIVE_RING_MINCOUNT"):
        ring_mincount = int(os.environ["MXREF_COLLECTIVE_RING_MINCOUNT"])
    if ring_mincount is not None:
        return AlgorithmTable([], "ring_mincount", ring_mincount=int(ring_mincount))
    measured = max([w for w in DEFAULT_TABLES if w <= world] or [min(DEFAULT_TABLES)])
    return AlgorithmTable.parse(DEFAULT_TABLES[measured], f"measured table for W={measured}")


def run(link: Link, algorithm: str, buf: np.ndarray, ufunc: np.ufunc, chunk_bytes: int = 1 << 18) -> None:
    """Allreduce ``buf`` in place with ``ufunc`` by the named algorithm."""
    if algorithm == "doubling":
        recursive_doubling(link, buf, ufunc)
    elif algorithm == "rabenseifner":
        rabenseifner(link, buf, ufunc)
    elif algorithm == "ring":
        ring_allreduce(link, buf, lambda d, s: ufunc(d, s, out=d))
    elif algorithm == "tree":
        tree_allreduce(link, buf, lambda d, s: ufunc(d, s, out=d), chunk_bytes)
    else:
        raise MXNetError(f"allreduce: unknown algorithm {algorithm!r}; use one of {', '.join(ALGORITHMS)}")
