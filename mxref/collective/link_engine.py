"""An engine that runs the algorithms over one ``Link``: shared by the mpi and local engines."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from ..base import env_bool
from . import algorithms, selection
from .agreement import DTYPE_NAMES, CheckedAllreduce
from .base import OP_NAMES, Engine, InMemoryCheckpoints, Link, parse_op, reduce_ufunc
from .halving import recursive_doubling

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
        # The plans of the calls seen so far (``plan_allreduce``); the API may call them directly
        # unless a subclass changes ``allreduce``.
        self._plans: Dict[tuple, Callable[[np.ndarray], None]] = {}
        self.plans = self._plans if type(self).allreduce is LinkEngine.allreduce else None
        self.chunk_bytes = chunk_bytes
        self.seqno = 0   # collectives since the last checkpoint, as Rabit's seq_counter
        self._ckpt = InMemoryCheckpoints()
        # Broadcast objects travel data-only; MXREF_ALLOW_PICKLE=1 lets other Python objects through.
        self.allow_pickle = env_bool("MXREF_ALLOW_PICKLE", False)

    def allreduce(self, buf: np.ndarray, op: int, prepare_fun: Optional[Callable[[], None]] = None) -> None:
        if prepare_fun is not None:
            prepare_fun()
        key = (buf.shape, buf.dtype, op)
        (self._plans.get(key) or self.plan_allreduce(buf, op, key))(buf)

    def plan_allreduce(self, buf: np.ndarray, op: int, key: tuple) -> Callable[[np.ndarray], None]:
        """Make (and keep under ``key``) ``run(b)``, this engine's allreduce of any contiguous ``b``
        of ``buf``'s shape and dtype under ``op``: the ufunc, the algorithm from the table, the
        check's header and, for the fused check, the bound messages are found once here.

        NOTE: the per-call path of small buffers; every microsecond in ``run`` is one MPI does
        not pay (docs/benchmarks.md, "Where a small call's microseconds go")."""
        op = parse_op(op)
        ufunc = reduce_ufunc(op, buf.dtype)       # an op the dtype cannot take raises here, uncached
        if len(self._plans) >= 256:
            self._plans.clear()
        run = None
        if self._checked is None:
            def run(b: np.ndarray) -> None:       # one rank: nothing to reduce
                self.seqno += 1
        else:
            algorithm = self.table.choose(buf.nbytes, buf.size, self.world_size)
            if self.check:
                run = self._checked.plan(buf, op, algorithm, ufunc, self)
            if run is None:
                run = self._general_plan(buf, op, algorithm, ufunc)
        self._plans[key] = run
        return run

    def _general_plan(self, buf: np.ndarray, op: int, algorithm: str,
                      ufunc: np.ufunc) -> Callable[[np.ndarray], None]:
        """The check (header only, or off the power-of-two core), then the algorithm."""
        checked, check, link, chunk = self._checked, self.check, self.link, self.chunk_bytes
        # Recursive doubling's scratch array of a small buffer is kept with the plan instead of
        # made per call (0.3-0.6 us at 4 KiB); a large one is allocated per call, so that the
        # plans never hold more than 256 x 64 KiB.
        scratch = np.empty(buf.size, buf.dtype) if algorithm == "doubling" and buf.nbytes <= 1 << 16 else None

        def run(b: np.ndarray) -> None:
            flat = b if b.ndim == 1 else b.reshape(-1)
            # With the check on, a small buffer travels inside the check's own messages.
            if not (check and checked(flat, op, algorithm, ufunc)):
                if scratch is not None:
                    recursive_doubling(link, flat, ufunc, scratch)
                else:
                    selection.run(link, algorithm, flat, ufunc, chunk)
            self.seqno += 1
        return run

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
