"""Allreduce and broadcast written over point-to-point messages: ring, pipelined binary tree, tree broadcast.

Every function takes a ``Link`` (``send`` / ``recv`` / ``sendrecv`` between ranks) and a flat,
contiguous numpy buffer, so the same code runs over MPI, over threads and over TCP sockets.

Ring allreduce, W ranks, buffer cut into W segments (rank r sends to r+1, receives from r-1)::

    reduce-scatter (W-1 steps)                 allgather (W-1 steps)
    step s: send seg (r-s), receive seg        step s: send seg (r+1-s), receive seg (r-s)
    (r-s-1) and fold it into the local copy    into place; afterwards all ranks hold all
    -> rank r ends owning reduced seg (r+1)    segments, byte-identical

Each rank sends 2(W-1)/W of the buffer, the bandwidth optimum, but pays 2(W-1) message latencies.
The tree (heap order: parent (r-1)//2, children 2r+1, 2r+2) pays only 2·log2(W) latencies but moves
the whole buffer over each edge, so it wins for small buffers; chunks pipeline the up and down passes::

            0            up:   children's chunk k folded into the parent's, then sent upward
          /   \\          down: the root's result streamed back down, chunk by chunk
         1     2
        / \\
       3   4
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from ..base import MXNetError
from . import codec
from .base import Link

Fold = Callable[[np.ndarray, np.ndarray], None]


def segment_bounds(n: int, parts: int) -> List[int]:
    """Start offsets of ``parts`` near-equal segments of ``n`` elements (the first ones one longer)."""
    q, r = divmod(n, parts)
    bounds = [0]
    for i in range(parts):
        bounds.append(bounds[-1] + q + (1 if i < r else 0))
    return bounds


def ring_allreduce(link: Link, buf: np.ndarray, fold: Fold) -> None:
    """Reduce-scatter then allgather around the ring ``0 -> 1 -> ... -> W-1 -> 0``, in place."""
    world, rank = link.world_size, link.rank
    if world == 1:
        return
    b = segment_bounds(buf.size, world)
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    tmp = np.empty(b[1] - b[0], buf.dtype)
    for s in range(world - 1):
        si, ri = (rank - s) % world, (rank - s - 1) % world
        incoming = tmp[:b[ri + 1] - b[ri]]
        link.sendrecv(nxt, buf[b[si]:b[si + 1]], prv, incoming)
        fold(buf[b[ri]:b[ri + 1]], incoming)
    for s in range(world - 1):
        si, ri = (rank + 1 - s) % world, (rank - s) % world
        link.sendrecv(nxt, buf[b[si]:b[si + 1]], prv, buf[b[ri]:b[ri + 1]])


def _tree(rank: int, world: int, root: int = 0):
    """Parent and children of ``rank`` in the heap-shaped binary tree rooted at ``root``."""
    v = (rank - root) % world
    parent = None if v == 0 else ((v - 1) // 2 + root) % world
    children = [(c + root) % world for c in (2 * v + 1, 2 * v + 2) if c < world]
    return parent, children


def _chunks(n: int, itemsize: int, chunk_bytes: int):
    step = max(1, chunk_bytes // max(itemsize, 1))
    return [(start, min(start + step, n)) for start in range(0, n, step)]


def tree_allreduce(link: Link, buf: np.ndarray, fold: Fold, chunk_bytes: int = 1 << 18) -> None:
    """Fold the buffers up the binary tree to rank 0, then stream the result down, chunk by chunk."""
    if link.world_size == 1:
        return
    parent, children = _tree(link.rank, link.world_size)
    chunks = _chunks(buf.size, buf.itemsize, chunk_bytes)
    tmp = np.empty(chunks[0][1] - chunks[0][0] if chunks else 0, buf.dtype)
    for lo, hi in chunks:
        part = buf[lo:hi]
        for child in children:
            incoming = tmp[:hi - lo]
            link.recv(child, incoming)
            fold(part, incoming)
        if parent is not None:
            link.send(parent, part)
    for lo, hi in chunks:
        part = buf[lo:hi]
        if parent is not None:
            link.recv(parent, part)
        for child in children:
            link.send(child, part)


def tree_broadcast(link: Link, buf: np.ndarray, root: int, chunk_bytes: int = 1 << 18) -> None:
    """Copy ``root``'s buffer to every rank along the binary tree rooted at ``root``."""
    if link.world_size == 1:
        return
    parent, children = _tree(link.rank, link.world_size, root)
    for lo, hi in _chunks(buf.size, buf.itemsize, chunk_bytes):
        part = buf[lo:hi]
        if parent is not None:
            link.recv(parent, part)
        for child in children:
            link.send(child, part)


def ring_allgather(link: Link, table: np.ndarray) -> None:
    """Row ``r`` of the ``(W, k)`` table comes from rank ``r``; afterwards every rank has every row."""
    world, rank = link.world_size, link.rank
    for s in range(world - 1):
        link.sendrecv((rank + 1) % world, table[(rank - s) % world],
                      (rank - 1) % world, table[(rank - s - 1) % world])


def broadcast_object(link: Link, obj: Any, root: int, allow_pickle: bool = False) -> Any:
    """Broadcast a value in ``codec.py``'s data-only encoding (arrays, numbers, strings, bytes,
    lists, tuples, dicts): its length first, then the bytes. Other Python objects are pickled
    only with ``allow_pickle`` (on the root to send, on a rank to accept). A value the root cannot
    encode is an error on every rank: the root sends the message instead (a negative length), so
    nobody is left waiting for bytes that never come."""
    size = np.zeros(1, np.int64)
    payload, failure = None, None
    if link.rank == root:
        try:
            blob = codec.encode(obj, allow_pickle, "broadcast")
        except MXNetError as exc:
            failure, blob = exc, str(exc).encode()
        payload = np.frombuffer(blob, np.uint8).copy()
        size[0] = -payload.size if failure is not None else payload.size
    tree_broadcast(link, size, root)
    if link.rank != root:
        payload = np.empty(abs(int(size[0])), np.uint8)
    tree_broadcast(link, payload, root)
    if size[0] < 0:
        raise failure if failure is not None else MXNetError(
            f"broadcast from root {root} failed there: {payload.tobytes().decode(errors='replace')}")
    return obj if link.rank == root else codec.decode(payload.tobytes(), allow_pickle, "broadcast")


def broadcast_value(link: Link, value: Any, root: int, out: Optional[np.ndarray] = None,
                    chunk_bytes: int = 1 << 18, allow_pickle: bool = False) -> Any:
    """``root``'s value on every rank: an array travels as raw bytes, anything else in the
    data-only encoding (``broadcast_object``; a pickle only with ``allow_pickle``).

    The root decides: a small header says "object" (and carries it) or gives the array's
    shape and dtype, then the array's bytes go down the tree with no pickling. A non-root rank's
    ``out`` array receives them in place when its size and dtype match; with ``out=None`` a new
    array is returned. A mismatching ``out`` is an error, raised only after the bytes were
    forwarded down the tree, so the ranks below it are not left waiting.
    """
    is_root = link.rank == root
    if is_root:
        head = ("array", value.shape, value.dtype.str) if isinstance(value, np.ndarray) else ("object", value)
    head = broadcast_object(link, head if is_root else None, root, allow_pickle)
    if head[0] == "object":
        return value if is_root else head[1]
    shape, dtype = tuple(head[1]), np.dtype(head[2])
    size = int(np.prod(shape, dtype=np.int64))
    fits = isinstance(out, np.ndarray) and out.size == size and out.dtype == dtype and out.flags.c_contiguous
    if is_root:
        data = np.ascontiguousarray(value).reshape(-1)
    else:
        data = out.reshape(-1) if fits else np.empty(size, dtype)
    tree_broadcast(link, data.view(np.uint8), root, chunk_bytes)
    if is_root:
        return value
    if out is not None and not fits:
        raise MXNetError(f"broadcast: rank {link.rank} passed an array of shape {out.shape} and dtype "
                         f"{out.dtype}, but root {root} sent shape {shape} and dtype {dtype}")
    return out if fits else data.reshape(shape)


def check_agreement(link: Link, what: str, names: Sequence[str], values: Sequence[int],
                    describe: Optional[Callable[[Sequence[int]], str]] = None) -> None:
    """Raise ``MXNetError`` naming the ranks whose ``values`` differ from the others'.

    One tiny tree allreduce of ``[v, -v]`` under max finds out whether all ranks agree (the common
    case costs 2·log2(W) small messages); only on a mismatch are all rows gathered, so that the
    message can name every rank and what it passed instead of hanging or corrupting data.
    """
    if link.world_size == 1:
        return
    v = np.asarray(values, np.int64)
    both = np.concatenate([v, -v])
    tree_allreduce(link, both, lambda d, s: np.maximum(d, s, out=d))
    if np.array_equal(both[:v.size], -both[v.size:]):
        return
    raise_disagreement(link, what, names, values, describe)


def raise_disagreement(link: Link, what: str, names: Sequence[str], values: Sequence[int],
                       describe: Optional[Callable[[Sequence[int]], str]] = None) -> None:
    """Every rank calls this once all know that they disagree: gather every rank's ``values`` and
    raise ``MXNetError`` naming the odd ones out."""
    v = np.asarray(values, np.int64)
    k = v.size
    table = np.zeros((link.world_size, k), np.int64)
    table[link.rank] = v
    ring_allgather(link, table)
    describe = describe or (lambda row: ", ".join(f"{n}={x}" for n, x in zip(names, row)))
    # The odd ones out are the ranks not holding the most common row (ties: rank 0's row wins).
    rows = [tuple(row) for row in table]
    common = max(rows, key=lambda row: (rows.count(row), -rows.index(row)))
    odd = [r for r, row in enumerate(rows) if row != common]
    lines = "; ".join(f"rank {r}: {describe(table[r])}" for r in range(link.world_size))
    raise MXNetError(f"{what}: ranks {odd} disagree with the others on {'/'.join(names)} ({lines})")
