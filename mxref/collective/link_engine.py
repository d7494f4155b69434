"""An engine that runs the algorithms over one ``Link``: shared by the mpi and local engines."""
from __future__ import annotations

import os
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..base import env_bool
from . import algorithms, selection
from .agreement import DTYPE_NAMES, CheckedAllreduce
from .base import OP_NAMES, Engine, InMemoryCheckpoints, Link, reduce_ufunc

DEFAULT_CHUNK_BYTES = 1 << 18

def ring_mincount_from(value: Optional[int]) -> Optional[int]:
    """The older ring/tree threshold: the argument, else ``MXREF_COLLECTIVE_RING_MINCOUNT``, else None
    (the measured algorithm table decides, ``selection.py``)."""
    if value is not None:
        return int(value)
    env = os.environ.get("MXREF_COLLECTIVE_RING_MINCOUNT")
    return int(env) if env else None


def describe_call(row) -> str:
    count, dtype, op = (int(x) for x in row[:3])
    return f"count={count}, dtype={DTYPE_NAMES.get(dtype, dtype)}, op={OP_NAMES.get(op, op)}"


class LinkEngine(Engine):
    """Allreduce/broadcast over a ``Link`` with agreement checks; checkpoints kept in memory only.

    Parameters
    ----------
    link : Link
        The point-to-point transport.
    check : bool
        Before each collective, verify that all ranks pass the same count, dtype and op (and pick
        the same algorithm), so a mismatch is an error naming the ranks instead of a hang: a small
        header reduced by recursive doubling, which on MPI carries small buffers itself
        (``agreement.py``); broadcasts check the root with a tiny tree allreduce.
        ``MXREF_COLLECTIVE_CHECK=0`` turns it off.
    algorithm : str, optional
        The allreduce algorithm table (``selection.py``): ``'doubling:65536,ring'`` or one name;
        default ``MXREF_COLLECTIVE_ALLREDUCE``, else the table measured for this world size.
    ring_mincount : int, optional
        The older rule instead of the table: the ring above this many elements, the tree below
        (``MXREF_COLLECTIVE_RING_MINCOUNT``).
    """

    def __init__(self, link: Link, check: bool = True, ring_mincount: Optional[int] = None,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, algorithm: Optional[str] = None) -> None:
        self.link = link
        self.rank, self.world_size = link.rank, link.world_size
        self.check = check and os.environ.get("MXREF_COLLECTIVE_CHECK", "1") != "0"
        self.ring_mincount = ring_mincount_from(ring_mincount)
        self.table = selection.table_for(self.world_size, algorithm, self.ring_mincount)
        self._checked = CheckedAllreduce(link, self.table.fused_capacity()) if self.world_size > 1 else None
        self._ufuncs: dict = {}
        self.chunk_bytes = chunk_bytes
        self.seqno = 0   # collectives since the last checkpoint, as Rabit's seq_counter
        self._ckpt = InMemoryCheckpoints()
        # Broadcast objects travel data-only; MXREF_ALLOW_PICKLE=1 lets other Python objects through.
        self.allow_pickle = env_bool("MXREF_ALLOW_PICKLE", False)

    def allreduce(self, buf: np.ndarray, op: int, prepare_fun: Optional[Callable[[], None]] = None) -> None:
        if prepare_fun is not None:
            prepare_fun()
        # NOTE: the per-call path of small buffers; every microsecond here is one MPI does not pay.
        key = (op, buf.dtype.num)
        ufunc = self._ufuncs.get(key)
        if ufunc is None:
            ufunc = self._ufuncs[key] = reduce_ufunc(op, buf.dtype)
        if self._checked is not None:
            algorithm = self.table.choose(buf.nbytes, buf.size, self.world_size)
            # With the check on, a small buffer travels inside the check's own messages.
            if not (self.check and self._checked(buf, op, algorithm, ufunc)):
                selection.run(self.link, algorithm, buf, ufunc, self.chunk_bytes)
        self.seqno += 1

    def broadcast(self, obj: Any, root: int) -> Any:
        self._check_root(root)
        if self.check:
            algorithms.check_agreement(self.link, "broadcast", ("root",), (root,))
        out = obj if isinstance(obj, np.ndarray) else None
        value = algorithms.broadcast_value(self.link, obj, root, out, self.chunk_bytes, self.allow_pickle)
        self.seqno += 1
        return value

    def checkpoint(self, global_model: Any, local_model: Any = None, lazy: bool = False) -> None:
        self._ckpt.store(global_model, local_model, lazy)
        self.seqno = 0

    def load_checkpoint(self) -> Tuple[int, Any, Any]:
        return self._ckpt.load()

    def version_number(self) -> int:
        return self._ckpt.version

    def shutdown(self) -> None:
        self.link.close()
