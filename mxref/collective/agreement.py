"""The allreduce agreement check as recursive doubling of a small header, carrying the data itself
when the buffer is small and the link accepts shorter messages than the receive buffer (MPI).

Every rank must pass the same count, dtype and op, and pick the same algorithm; otherwise ranks
wait for messages that never come. The check reduces, under max, the header ::

    [count, dtype, op, algorithm, -count, -dtype, -op, -algorithm, payload bytes, 0]   (int64)

over recursive doubling's schedule (``halving.py``): the ranks agree iff afterwards the first half
equals minus the second, and every rank ends with the same header, so all raise together.

For a small buffer that recursive doubling reduces anyway, the check would double the latency
(two exchanges instead of one), so the data rides behind the header in the same messages: each
step sends ``header + payload`` and the receiver folds the payload only if the two headers are
identical. A rank whose group saw a mismatch stops sending its payload (header only) and only
folds headers from then on. Receives are posted with the largest message any rank may send
(``80 + capacity`` bytes), so a rank that disagrees on the count sends a message that fits
(MPI then delivers fewer bytes than the buffer holds; the header says what came). Links that
insist on exact sizes (threads, TCP) run the header alone, 80 bytes, before the algorithm.
"""
from __future__ import annotations

import struct
from typing import Any, Callable, Dict, Optional

import numpy as np

from ..base import MXNetError
from . import algorithms
from .base import OP_NAMES, Link
from .halving import doubling_schedule, pow2_core

HEAD_BYTES = 80
_SAME = 72                 # the bytes two headers must share: values, negations, payload size
ALGORITHM_IDS = {"doubling": 1, "rabenseifner": 2, "ring": 3, "tree": 4}
_ALGORITHM_NAMES = {v: k for k, v in ALGORITHM_IDS.items()}
DTYPE_NAMES = {np.dtype(t).num: np.dtype(t).name for t in
               ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                "float16", "float32", "float64")}


def describe(row) -> str:
    count, dtype, op, algo = (int(x) for x in row[:4])
    return (f"count={count}, dtype={DTYPE_NAMES.get(dtype, dtype)}, op={OP_NAMES.get(op, op)}, "
            f"algorithm={_ALGORITHM_NAMES.get(algo, algo)}")


class CheckedAllreduce:
    """Per-engine state of the check: the schedule and two preallocated message buffers.

    ``capacity`` is the largest payload (bytes) fused into the check's messages; it must be the
    same on every rank (it comes from the algorithm table, which is).
    """

    def __init__(self, link: Link, capacity: int) -> None:
        self.link = link
        self.fuse = bool(getattr(link, "short_receives", False)) and capacity > 0
        self.capacity = capacity if self.fuse else 0
        self.out = np.zeros(HEAD_BYTES + self.capacity, np.uint8)
        self.inc = np.zeros(HEAD_BYTES + self.capacity, np.uint8)
        self._out_mv, self._inc_mv = memoryview(self.out)[:_SAME], memoryview(self.inc)[:_SAME]
        self.out_head = self.out[:HEAD_BYTES].view(np.int64)
        self.inc_head = self.inc[:HEAD_BYTES].view(np.int64)
        self._head_msg, self._inc_msg = link.prepare(self.out[:HEAD_BYTES]), link.prepare(self.inc)
        rank, world = link.rank, link.world_size
        _, rem, core = pow2_core(rank, world)
        self.role = "give" if core < 0 else ("take" if rank < 2 * rem else "")
        steps = doubling_schedule(rank, world)
        self._steps = tuple((peer, first, i == len(steps) - 1) for i, (peer, first) in enumerate(steps))
        self._calls: Dict[tuple, tuple] = {}
        self._exchanges: Dict[tuple, tuple] = {}
        self._out_head_mv = memoryview(self.out)[:HEAD_BYTES]

    def _prepare(self, buf: np.ndarray, op: int, algorithm: str) -> tuple:
        """What a call signature needs, made once: the packed header, whether the payload is
        fused, the payload views of both buffers, the prepared message and the header's values."""
        if len(self._calls) > 256:
            self._calls.clear()
        nbytes = buf.nbytes
        fused = self.fuse and nbytes <= self.capacity and algorithm == "doubling"
        n, d, a = buf.size, buf.dtype.num, ALGORITHM_IDS[algorithm]
        packed = struct.pack("<10q", n, d, op, a, -n, -d, -op, -a, nbytes if fused else 0, 0)
        mine = theirs = None
        message = self._head_msg
        if fused:
            end = HEAD_BYTES + nbytes
            mine, theirs = self.out[HEAD_BYTES:end].view(buf.dtype), self.inc[HEAD_BYTES:end].view(buf.dtype)
            message = self.link.prepare(self.out[:end])
        entry = self._calls[(buf.dtype, buf.size, op, algorithm)] = (packed, fused, mine, theirs, message,
                                                                     (n, d, op, a))
        return entry

    def __call__(self, buf: np.ndarray, op: int, algorithm: str, ufunc: np.ufunc) -> bool:
        """Check agreement; True if ``buf`` was also reduced here (fused), False if the caller runs
        ``algorithm`` now. ``MXNetError`` on every rank if the ranks disagree."""
        entry = self._calls.get((buf.dtype, buf.size, op, algorithm)) or self._prepare(buf, op, algorithm)
        packed, fused, mine, theirs, message, ident = entry
        self._out_head_mv[:] = packed
        if not fused:
            return self._general(buf, ufunc, entry)
        mine[...] = buf
        if self.role:
            return self._general(buf, ufunc, entry)
        # The common call, written out: a core rank of a fused check (every rank when W = 2^k).
        sendrecv, inc, out_mv, inc_mv = self.link.sendrecv_prepared, self._inc_msg, self._out_mv, self._inc_mv
        for i, (peer, peer_first, last) in enumerate(self._steps):
            sendrecv(peer, message, peer, inc)
            if out_mv != inc_mv:
                self._mismatch(i, ident)
            dst = buf if last else mine        # the last fold writes straight into the caller's buffer
            if peer_first:
                ufunc(theirs, mine, out=dst)
            else:
                ufunc(mine, theirs, out=dst)
        return True

    def plan(self, buf: np.ndarray, op: int, algorithm: str, ufunc: np.ufunc,
             owner: Any) -> Optional[Callable]:
        """``run(b)``: the check and the fused fold for arrays of ``buf``'s shape and dtype, every
        name bound once; then ``owner.seqno += 1``. None unless the payload is fused and this rank
        is on the power-of-two core (the common call; ``__call__`` covers the others)."""
        packed, fused, mine, theirs, message, ident = self._prepare(buf, op, algorithm)
        if not fused or self.role:
            return None
        mine, theirs = mine.reshape(buf.shape), theirs.reshape(buf.shape)
        head, out_mv, inc_mv = self._out_head_mv, self._out_mv, self._inc_mv
        # The peer's partial goes first where it holds the lower ranks' (the same bits everywhere).
        end = HEAD_BYTES + buf.nbytes
        steps = tuple((*self._exchange(peer, message, end),
                       (theirs, mine) if peer_first else (mine, theirs), last)
                      for peer, peer_first, last in self._steps)
        mismatch = self._mismatch
        if len(steps) == 1:             # two ranks: one exchange, the fold lands in the caller's array
            (start, finish, (x, y), _), = steps

            def run(b: np.ndarray) -> None:
                head[:] = packed
                mine[...] = b
                start()
                finish()
                if out_mv != inc_mv:
                    mismatch(0, ident)
                ufunc(x, y, b)
                owner.seqno += 1
            return run

        def run(b: np.ndarray) -> None:
            head[:] = packed
            mine[...] = b
            for i, (start, finish, (x, y), last) in enumerate(steps):
                start()
                finish()
                if out_mv != inc_mv:
                    mismatch(i, ident)
                ufunc(x, y, b if last else mine)
            owner.seqno += 1
        return run

    def _exchange(self, peer: int, message: Any, nbytes: int) -> tuple:
        """The link's bound exchange with ``peer`` of ``message`` (the first ``nbytes`` of ``out``)
        for ``inc``: one per (peer, nbytes) for the life of the engine, shared by the plans."""
        key = (peer, nbytes)
        pair = self._exchanges.get(key)
        if pair is None:
            pair = self._exchanges[key] = self.link.bind_sendrecv(peer, message, peer, self._inc_msg)
        return pair

    def _mismatch(self, step: int, ident: tuple) -> None:
        """A core rank whose exchange ``step`` brought a different header: finish, then raise."""
        self._merge(False, None, None, False, None, None)
        self._disagree(step + 1, ident)

    def _disagree(self, step: int, ident: tuple) -> None:
        """A core rank that saw a mismatch: header-only exchanges from ``step`` on, then raise."""
        for peer, peer_first, _ in self._steps[step:]:
            self.link.sendrecv_prepared(peer, self._head_msg, peer, self._inc_msg)
            self._merge(False, None, None, peer_first, None, None)
        self._raise(ident)

    def _raise(self, ident: tuple) -> None:
        if self._agreed():     # same call everywhere, yet some rank sent no payload
            raise MXNetError(f"allreduce: rank {self.link.rank}: the ranks agree on the call but not on "
                             "which sizes travel with the check; set MXREF_COLLECTIVE_ALLREDUCE "
                             "alike on every rank")
        algorithms.raise_disagreement(self.link, "allreduce", ("count", "dtype", "op", "algorithm"),
                                      ident, describe)

    def _general(self, buf: np.ndarray, ufunc: np.ufunc, entry: tuple) -> bool:
        """Any rank, fused or header only, including the ranks off the power-of-two core."""
        link = self.link
        _, fused, mine, theirs, message, ident = entry
        nbytes = buf.nbytes if fused else 0
        head, inc, agree = self._head_msg, self._inc_msg, True
        if self.role == "give":      # off the core: hand over, then receive the final message
            link.send(link.rank + 1, self.out[:HEAD_BYTES + nbytes])
            link.recv(link.rank + 1, self.inc)
            np.copyto(self.out_head, self.inc_head)
            agree = self._agreed() and int(self.inc_head[8]) == nbytes
            if agree and fused:
                buf[...] = theirs
        else:
            if self.role == "take":
                link.recv(link.rank - 1, self.inc)
                agree = self._merge(agree, mine, theirs, True, ufunc, mine)
            for peer, peer_first, _ in self._steps:
                link.sendrecv_prepared(peer, message if agree else head, peer, inc)
                agree = self._merge(agree, mine, theirs, peer_first, ufunc, mine)
            if self.role == "take":
                link.send(link.rank - 1, self.out[:HEAD_BYTES + (nbytes if agree else 0)])
            if agree and fused:
                buf[...] = mine
        if not agree:
            self._raise(ident)
        return fused

    def _merge(self, agree: bool, mine, theirs, peer_first: bool, ufunc: np.ufunc, dst) -> bool:
        """Take in the message just received (folding its payload into ``dst``); whether this
        rank's group still agrees."""
        if agree and self._out_mv == self._inc_mv:       # the common case: identical headers
            if mine is not None:
                if peer_first:
                    ufunc(theirs, mine, out=dst)
                else:
                    ufunc(mine, theirs, out=dst)
            return True
        np.maximum(self.out_head[:8], self.inc_head[:8], out=self.out_head[:8])
        self.out_head[8] = 0       # from now on this rank sends its header only
        return False

    def _agreed(self) -> bool:
        h = self.out_head
        return bool((h[:4] == -h[4:8]).all()) and h[8] >= 0
