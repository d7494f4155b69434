"""The robust engine: Rabit's fault tolerance — in-memory checkpoints, cached results, consensus, replay.

Program model (Rabit's): ``version = load_checkpoint()``, then per iteration some collectives and
one ``checkpoint``. If a worker dies, the launcher restarts it; the restarted program calls
``load_checkpoint`` again and re-issues the same calls, which are answered from the survivors'
memory while the survivors wait inside their current collective. Nothing is written to disk.

Before every call all ranks exchange a 7-number header (one ring allgather)::

    action (LOAD / COLLECTIVE / CHECKPOINT / SHUTDOWN), version, seqno, kind, root-or-op, count, dtype

and every rank takes the same decision from the same table:

    A. a rank still at CHECKPOINT while another already committed it -> it commits too
    B. some rank is LOADing (a restarted process) -> if every live rank waits at a checkpoint
       (without local models) they commit it first; then the lowest live rank sends the newest
       checkpoint; local models come back from a ring successor's replica
    C. seqnos differ -> the lowest rank ahead that kept the result of the smallest seqno sends
       it to the ranks behind; they take it (prepare_fun is skipped) and move on
    D. all at the same point -> run the collective for real (on a copy, so a failure halfway
       leaves the input intact), cache the result under its seqno; or commit the checkpoint

Whoever is not served in a round simply joins the next round. Any broken connection raises
``LinkError``; the engine then reconnects through the tracker (which waits for the restarted rank)
and repeats the round: fresh connections mean no stale bytes can be mistaken for new ones.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..base import MXNetError, env_bool
from . import algorithms, codec, selection
from .base import Engine, LinkError, reduce_ufunc, register
from .link_engine import DEFAULT_CHUNK_BYTES, describe_call, ring_mincount_from

LOAD, COLLECTIVE, CHECKPOINT, SHUTDOWN = 1, 2, 3, 4
ALLREDUCE, BROADCAST = 1, 2
_ACTIONS = {LOAD: "load_checkpoint", COLLECTIVE: "collective", CHECKPOINT: "checkpoint", SHUTDOWN: "finalize"}
_KINDS = {0: "", ALLREDUCE: "allreduce", BROADCAST: "broadcast"}


def _row_text(row) -> str:
    action, version, seqno, kind = (int(x) for x in row[:4])
    what = _ACTIONS.get(action, action) if action != COLLECTIVE else _KINDS[kind]
    detail = f" ({describe_call(row[5:7].tolist() + [row[4]])})" if kind == ALLREDUCE else ""
    return f"{what} at version {version} seqno {seqno}{detail}"


def _pickle(obj: Any, allow_pickle: bool = False) -> bytes:
    """``obj`` in the data-only encoding of ``codec.py``; pickled only with the explicit opt-in."""
    return codec.encode(obj, allow_pickle, "robust engine")


def _unpickle(data: bytes, allow_pickle: bool = False) -> Any:
    """The inverse of ``_pickle``; a pickle from a peer is refused unless this rank opted in too."""
    return codec.decode(data, allow_pickle, "robust engine")


def _shift(link, send_to: int, recv_from: int, payload: Optional[bytes]) -> Optional[bytes]:
    """Send a variable-length byte string to one neighbour and receive one from another."""
    data = np.frombuffer(payload or b"", np.uint8)
    n_out, n_in = np.array([data.size if payload is not None else -1], np.int64), np.zeros(1, np.int64)
    link.sendrecv(send_to, n_out, recv_from, n_in)
    got = np.empty(max(int(n_in[0]), 0), np.uint8)
    link.sendrecv(send_to, data, recv_from, got)
    return None if n_in[0] < 0 else got.tobytes()


def _send_bytes(link, peer: int, payload: Optional[bytes], tag: int = 0) -> None:
    """Point-to-point: a (length, tag) header, then the bytes; ``None`` travels as length -1."""
    link.send(peer, np.array([-1 if payload is None else len(payload), tag], np.int64))
    if payload:
        link.send(peer, np.frombuffer(payload, np.uint8))


def _recv_bytes(link, peer: int) -> Tuple[Optional[bytes], int]:
    head = np.zeros(2, np.int64)
    link.recv(peer, head)
    if head[0] <= 0:
        return (None if head[0] < 0 else b""), int(head[1])
    data = np.empty(int(head[0]), np.uint8)
    link.recv(peer, data)
    return data.tobytes(), int(head[1])


@register("robust")
class RobustEngine(Engine):
    """Fault-tolerant allreduce/broadcast/checkpoint; see the module docstring for the protocol.

    Parameters
    ----------
    world, rank : optional
        A ``LocalWorld`` and rank for thread worlds (tests); otherwise a TCP link is built from
        ``MXREF_TRACKER_URI``, ``MXREF_TRACKER_PORT``, ``MXREF_RANK``, ``MXREF_WORLD_SIZE``.
    attempt : int, optional
        How many times this rank was restarted (``MXREF_NUM_ATTEMPT``, set by the launcher).
    global_replica : int
        About how many ranks keep each collective's result (Rabit's ``rabit_global_replica``,
        default 5, ``MXREF_ROBUST_GLOBAL_REPLICA``): result ``seqno`` is kept by the ranks with
        ``rank % round == seqno % round``, ``round = max(W // global_replica, 1)``. Fewer copies
        save memory; a result whose every holder died cannot be replayed (an error says so).
    local_replica : int
        How many ring successors keep a copy of each rank's local model (Rabit's
        ``rabit_local_replica``, default 2, ``MXREF_ROBUST_LOCAL_REPLICA``), so a rank's local
        model survives unless it dies together with all those successors.
    allow_pickle : bool, optional
        Checkpoints and cached broadcast results are kept and sent in a data-only encoding
        (``codec.py``: arrays, numbers, strings, bytes, lists, tuples, dicts). ``True`` (or
        ``MXREF_ALLOW_PICKLE=1``) pickles other Python objects too, and unpickles what peers send.
    """

    def __init__(self, world: Any = None, rank: Optional[int] = None, attempt: Optional[int] = None,
                 link: Any = None, ring_mincount: Optional[int] = None,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, global_replica: Optional[int] = None,
                 local_replica: Optional[int] = None, allow_pickle: Optional[bool] = None,
                 algorithm: Optional[str] = None) -> None:
        self.allow_pickle = env_bool("MXREF_ALLOW_PICKLE", False) if allow_pickle is None \
            else bool(allow_pickle)
        if link is None:
            if world is not None:
                from .local_engine import LocalRobustLink
                link = LocalRobustLink(world, rank or 0)
            else:
                from .transport import SocketLink
                link = SocketLink.from_env()
        self.link = link
        self.thread_local = world is not None   # a thread world binds one rank per thread
        self.rank, self.world_size = link.rank, link.world_size
        self.attempt = int(attempt if attempt is not None else os.environ.get("MXREF_NUM_ATTEMPT", 0))
        self.ring_mincount = ring_mincount_from(ring_mincount)
        self.table = selection.table_for(self.world_size, algorithm, self.ring_mincount)
        self.chunk_bytes = chunk_bytes
        replicas = int(global_replica or os.environ.get("MXREF_ROBUST_GLOBAL_REPLICA", 5))
        self.round = max(self.world_size // max(replicas, 1), 1)
        local_copies = int(local_replica or os.environ.get("MXREF_ROBUST_LOCAL_REPLICA", 2))
        self.local_replica = max(min(local_copies, self.world_size - 1), 0)
        self.version, self.seqno = 0, 0
        self.cache: dict = {}            # seqno -> (meta, result) since the last checkpoint
        self.global_ckpt: Any = None     # encoded bytes (codec.py), or ("lazy", obj)
        self.local_ckpt: Optional[bytes] = None
        self.replicas: dict = {}         # origin rank -> its local model, for the origin's recovery
        self._pending: Any = None        # the checkpoint being committed: (global, local)
        self._handed_off: Any = None     # the replicas received, once ours went to our successors
        self.link.reconnect()

    # -- the public calls, each one consensus round loop --------------------------------------
    def allreduce(self, buf: np.ndarray, op: int, prepare_fun: Optional[Callable[[], None]] = None) -> None:
        meta = (ALLREDUCE, op, buf.size, buf.dtype.num)
        prepared = []

        def execute():
            if prepare_fun is not None and not prepared:
                prepare_fun()
                prepared.append(True)
            work = buf.copy()
            selection.run(self.link, self.table.choose(buf.nbytes, buf.size, self.world_size), work,
                          reduce_ufunc(op, buf.dtype), self.chunk_bytes)
            return work
        result = self._run(COLLECTIVE, meta, execute)
        buf[...] = result

    def broadcast(self, obj: Any, root: int) -> Any:
        self._check_root(root)
        out = obj if isinstance(obj, np.ndarray) and self.rank != root else None
        # The result is cached encoded: whoever replays it may have passed None or an array.
        data = self._run(COLLECTIVE, (BROADCAST, root, -1, -1), lambda: _pickle(
            algorithms.broadcast_value(self.link, obj, root, None, self.chunk_bytes, self.allow_pickle),
            self.allow_pickle))
        value = _unpickle(data, self.allow_pickle)
        if out is None:
            return obj if self.rank == root else value
        if not isinstance(value, np.ndarray) or value.size != out.size or value.dtype != out.dtype:
            raise MXNetError(f"broadcast: rank {self.rank} passed an array of shape {out.shape} and dtype "
                             f"{out.dtype}, but root {root} sent {getattr(value, 'shape', type(value))}")
        out.reshape(-1)[...] = value.reshape(-1)
        return out

    def checkpoint(self, global_model: Any, local_model: Any = None, lazy: bool = False) -> None:
        self._pending = (("lazy", global_model) if lazy else _pickle(global_model, self.allow_pickle),
                         None if local_model is None else _pickle(local_model, self.allow_pickle))
        self._handed_off = None
        self._run(CHECKPOINT, (0, int(local_model is not None), 0, 0), None)

    def load_checkpoint(self) -> Tuple[int, Any, Any]:
        return self._run(LOAD, (0, 0, 0, 0), None)

    def version_number(self) -> int:
        return self.version

    def tracker_print(self, msg: str) -> None:
        lines = "\n".join(f"[{self.rank}] {line}" for line in str(msg).split("\n"))
        if hasattr(self.link, "tracker_print"):
            self.link.tracker_print(lines)    # printed by the tracker, like Rabit's TrackerPrint
        else:                                 # one write: no other output between text and newline
            sys.stdout.write(lines + "\n")
            sys.stdout.flush()

    def shutdown(self) -> None:
        self._run(SHUTDOWN, (0, 0, 0, 0), None)
        self.link.close()

    # -- the protocol --------------------------------------------------------------------------
    def _run(self, action: int, meta: tuple, execute: Optional[Callable[[], Any]]) -> Any:
        while True:
            try:
                done, value = self._round(action, meta, execute)
            except LinkError:
                if self.link.reconnect(finishing=action == SHUTDOWN) == "finished":
                    return None      # every rank had agreed to shut down; one already left
                continue
            if done:
                return value

    def _round(self, action: int, meta: tuple, execute) -> Tuple[bool, Any]:
        table = np.zeros((self.world_size, 7), np.int64)
        if action == CHECKPOINT:     # the count column says whether our local model was handed off
            meta = (0, meta[1], int(self._handed_off is not None), 0)
        table[self.rank] = (action, self.version, self.seqno) + tuple(meta)
        algorithms.ring_allgather(self.link, table)
        acts, vers, seqs = table[:, 0], table[:, 1], table[:, 2]
        live = acts != LOAD
        vmax = int(vers[live].max()) if live.any() else 0
        # A. A checkpoint some rank already committed is final: the laggards commit theirs too.
        if live.any() and (vers[live] < vmax).any():
            behind = np.flatnonzero(live & (vers < vmax) & (acts != CHECKPOINT))
            if behind.size:
                raise MXNetError(f"collective: ranks {behind.tolist()} are at version "
                                 f"{vers[behind].tolist()} while others reached {vmax}")
            if action == CHECKPOINT and self.version < vmax:
                self._commit()
                return True, None
            return False, None
        # B. Restarted ranks load the newest checkpoint from a live rank.
        if not live.all():
            if not live.any():
                return True, (0, None, None)       # a fresh start: nobody has anything
            if (acts[live] == CHECKPOINT).all() and not table[live, 4].any() and \
                    (seqs[live] == seqs[live][0]).all():
                # As Rabit: a checkpoint every live rank has reached is committed first, and the
                # restarted rank loads the new version instead of replaying this one. (A lazily
                # checkpointed model may already hold the new version's values by now.) With
                # local models we replay instead: the restarted rank's new local model is unknown.
                if action == CHECKPOINT:
                    self._commit()
                    return True, None
                return False, None
            return self._serve_checkpoint(action, live, acts)
        # C. Ranks behind get the cached result of the smallest seqno.
        smin = int(seqs.min())
        if (seqs != smin).any():
            return self._serve_cached(action, meta, seqs, smin)
        # D. Everyone is at the same call: it must be the same call.
        if (acts == CHECKPOINT).all() and (table[:, 4] == table[0, 4]).all() and table[0, 4]:
            return self._checkpoint_with_local_models(table)
        rows = [tuple(r) for r in table[:, [0, 3, 4, 5, 6]]]
        if any(r != rows[0] for r in rows):
            lines = "; ".join(f"rank {r}: {_row_text(table[r])}" for r in range(self.world_size))
            raise MXNetError(f"collective: ranks disagree on the call to make ({lines}); every rank must "
                             "issue the same sequence of collectives with the same sizes")
        if action == COLLECTIVE:
            result = execute()
            if self._holds(self.rank, self.seqno):
                self.cache[self.seqno] = (meta, result)
            self.seqno += 1
            return True, result
        if action == CHECKPOINT:
            self._commit()
        return True, None

    def _checkpoint_with_local_models(self, table: np.ndarray) -> Tuple[bool, Any]:
        """Two phases, so no rank commits before every local model has a copy on its successor.

        Phase 1: each rank sends its new local model to its ``local_replica`` successors (repeated
        by everyone until one
        round finds every rank past it: a failure halfway leaves some without their copy).
        Phase 2: a round in which every rank reports "handed off" commits. A rank whose round
        failed after another committed is then behind by a version and commits by rule A.
        """
        if table[:, 5].all():
            self._commit()
            return True, None
        w, r = self.world_size, self.rank
        self._handed_off = {(r - k) % w: _shift(self.link, (r + k) % w, (r - k) % w, self._pending[1])
                            for k in range(1, self.local_replica + 1)}
        return False, None

    def _holds(self, rank: int, seqno: int) -> bool:
        """Whether ``rank`` keeps the result of call ``seqno`` (Rabit's round-robin caching)."""
        return rank % self.round == seqno % self.round

    def _commit(self) -> None:
        self.global_ckpt, self.local_ckpt = self._pending
        if self._handed_off is not None:
            self.replicas = {o: data for o, data in self._handed_off.items() if data is not None}
        self._pending = self._handed_off = None
        self.version += 1
        self.seqno = 0
        self.cache.clear()

    def _serve_checkpoint(self, action: int, live: np.ndarray, acts: np.ndarray) -> Tuple[bool, Any]:
        # Only the restarted ranks need the checkpoint: one donor sends it to each of them. Prefer
        # a rank still inside the version's collectives: a lazily checkpointed model is only
        # guaranteed unchanged until the version's last collective has finished.
        inside = np.flatnonzero(live & (acts == COLLECTIVE))
        donor = int(inside[0]) if inside.size else int(np.flatnonzero(live)[0])
        loaders = np.flatnonzero(~live).tolist()
        if self.rank == donor:
            ckpt = self.global_ckpt
            if isinstance(ckpt, tuple):        # lazy: serialise only now that someone needs it
                ckpt = _pickle(ckpt[1], self.allow_pickle)
            for peer in loaders:
                _send_bytes(self.link, peer, ckpt, self.version)
        elif self.rank in loaders:
            gbytes, version = _recv_bytes(self.link, donor)
        mine, replicas = self._restore_local_models(live, loaders)
        if action != LOAD:
            return False, None
        self.version, self.seqno, self.global_ckpt, self.local_ckpt = version, 0, gbytes, mine
        self.replicas = replicas
        self.cache.clear()
        gmodel = None if gbytes is None else _unpickle(gbytes, self.allow_pickle)
        return True, (version, gmodel, None if mine is None else _unpickle(mine, self.allow_pickle))

    def _restore_local_models(self, live: np.ndarray, loaders: list) -> Tuple[Optional[bytes], dict]:
        """Give each restarted rank its local model (from its first live successor's replica) and
        the replicas it keeps for its predecessors (from those that are alive).

        All ranks list the same transfers in the same order and each does its part with blocking
        sends/receives: the first unfinished transfer always has both ends ready, so none waits
        forever.
        """
        w = self.world_size
        transfers = []     # (sender, receiver, origin): send origin's local model
        for r in loaders:
            holders = [(r + k) % w for k in range(1, self.local_replica + 1) if live[(r + k) % w]]
            if holders:
                transfers.append((holders[0], r, r))
            transfers += [((r - k) % w, r, (r - k) % w) for k in range(1, self.local_replica + 1)
                          if live[(r - k) % w]]
        mine, replicas = None, {}
        for sender, receiver, origin in transfers:
            if self.rank == sender:
                data = self.replicas.get(origin) if origin == receiver else self.local_ckpt
                _send_bytes(self.link, receiver, data)
            elif self.rank == receiver:
                data = _recv_bytes(self.link, sender)[0]
                if origin == receiver:
                    mine = data
                elif data is not None:
                    replicas[origin] = data
        return mine, replicas

    def _serve_cached(self, action: int, meta: tuple, seqs: np.ndarray, smin: int) -> Tuple[bool, Any]:
        holders = [r for r in range(self.world_size) if seqs[r] > smin and self._holds(r, smin)]
        behind = np.flatnonzero(seqs == smin).tolist()
        if not holders:
            raise MXNetError(f"collective: the result of call {smin} of version {self.version} is lost: "
                             f"every rank that kept it was restarted (ranks {behind} need it); use more "
                             "global_replica copies")
        donor = holders[0]
        if self.rank == donor:
            payload = _pickle(self.cache[smin], self.allow_pickle)
            for peer in behind:
                _send_bytes(self.link, peer, payload)
        if self.seqno != smin:
            return False, None
        item = _unpickle(_recv_bytes(self.link, donor)[0], self.allow_pickle)
        if action != COLLECTIVE or tuple(item[0]) != tuple(meta):
            theirs = _KINDS[item[0][0]]
            raise MXNetError(f"collective: rank {self.rank} replays call {smin} of version {self.version} as "
                             f"{_ACTIONS[action] if action != COLLECTIVE else _KINDS[meta[0]]} {meta[1:]}, "
                             f"but rank {donor} ran {theirs} {tuple(item[0][1:])} there; check that the "
                             "restarted program issues the same sequence of calls")
        if self._holds(self.rank, smin):
            self.cache[smin] = item
        self.seqno += 1
        return True, item[1]
