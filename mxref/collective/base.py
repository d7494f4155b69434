"""The collective engine interface, the reduce operators, the point-to-point ``Link`` and the registry."""
from __future__ import annotations

import pickle
from typing import Any, Callable, Dict, Optional, Tuple, Type

import numpy as np

from ..base import MXNetError

# Operator codes as Rabit numbers them (MAX=0, MIN=1, SUM=2, BITOR=3); PROD is ours.
MAX, MIN, SUM, BITOR, PROD = 0, 1, 2, 3, 4
_OP_NAMES = {"max": MAX, "min": MIN, "sum": SUM, "bitor": BITOR, "bitwise_or": BITOR, "bor": BITOR,
             "prod": PROD}
_UFUNCS = {MAX: np.maximum, MIN: np.minimum, SUM: np.add, BITOR: np.bitwise_or, PROD: np.multiply}
OP_NAMES = {MAX: "max", MIN: "min", SUM: "sum", BITOR: "bitor", PROD: "prod"}


def parse_op(op: Any) -> int:
    """Turn ``SUM`` / ``'sum'`` / ``2`` into the operator code, raising ``MXNetError`` on anything else."""
    if isinstance(op, str):
        code = _OP_NAMES.get(op.lower())
    elif isinstance(op, (int, np.integer)) and int(op) in _UFUNCS:
        code = int(op)
    else:
        code = None
    if code is None:
        raise MXNetError(f"allreduce: unknown op {op!r}; use one of sum, max, min, prod, bitor")
    return code


def reducer(op: int, dtype: np.dtype) -> Callable[[np.ndarray, np.ndarray], None]:
    """``f(dst, src)`` that folds ``src`` into ``dst`` in place with the operator ``op``."""
    dtype = np.dtype(dtype)
    if op == BITOR and dtype.kind not in "iub":
        raise MXNetError(f"allreduce: op bitor needs an integer or bool buffer, got dtype {dtype}")
    if dtype.kind == "b" and op in (SUM, PROD):
        # NOTE: numpy's add/multiply on bools are or/and; say so instead of surprising.
        ufunc = np.logical_or if op == SUM else np.logical_and
    else:
        ufunc = _UFUNCS[op]

    def fold(dst: np.ndarray, src: np.ndarray) -> None:
        ufunc(dst, src, out=dst)
    return fold


class LinkError(MXNetError):
    """A peer went away in the middle of a message (the robust engine recovers from this)."""


class Link:
    """Point-to-point messages between the ranks of one job; every algorithm is written over this.

    Buffers are 1-D contiguous numpy arrays; ``recv`` fills its buffer in place and the sender and
    receiver must agree on the byte count. Implementations: MPI (``mpi_engine``), queues between
    threads (``local_engine``) and TCP sockets (``transport``).
    """
    rank: int = 0
    world_size: int = 1

    def send(self, peer: int, buf: np.ndarray) -> None:
        raise NotImplementedError

    def recv(self, peer: int, buf: np.ndarray) -> None:
        raise NotImplementedError

    def sendrecv(self, send_peer: int, send_buf: np.ndarray, recv_peer: int, recv_buf: np.ndarray) -> None:
        """Send and receive at once; a ring step must not deadlock when every rank sends first."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class Engine:
    """What every collective engine offers; the module-level functions of ``mxref.collective`` call it.

    Buffers handed to ``allreduce`` are flat, contiguous numpy arrays (the API layer flattens and
    waits for NDArrays). ``broadcast`` moves arbitrary picklable objects.
    """
    name = "base"
    rank: int = 0
    world_size: int = 1

    def allreduce(self, buf: np.ndarray, op: int, prepare_fun: Optional[Callable[[], None]] = None) -> None:
        raise NotImplementedError

    def broadcast(self, obj: Any, root: int) -> Any:
        """``root``'s ``obj`` on every rank; a numpy array ``obj`` on other ranks is filled in place."""
        raise NotImplementedError

    def _check_root(self, root: int) -> None:
        if not 0 <= root < self.world_size:
            raise MXNetError(f"broadcast: root {root} is not a rank of this job "
                             f"(world size {self.world_size})")

    def checkpoint(self, global_model: Any, local_model: Any = None, lazy: bool = False) -> None:
        raise NotImplementedError

    def load_checkpoint(self) -> Tuple[int, Any, Any]:
        raise NotImplementedError

    def version_number(self) -> int:
        raise NotImplementedError

    def tracker_print(self, msg: str) -> None:
        print(f"[{self.rank}] {msg}", flush=True)

    def shutdown(self) -> None:
        pass


class InMemoryCheckpoints:
    """Checkpoints kept in this process only (no fault tolerance): what the mpi/local engines need.

    The global model is pickled at ``checkpoint`` time so later in-place edits do not change it,
    except for ``lazy`` checkpoints, which keep a reference as Rabit's ``LazyCheckPoint`` does.
    """

    def __init__(self) -> None:
        self.version = 0
        self._global: Any = None
        self._local: Any = None
        self._lazy = False

    def store(self, global_model: Any, local_model: Any, lazy: bool) -> None:
        self.version += 1
        self._lazy = lazy
        self._global = global_model if lazy else pickle.dumps(global_model, protocol=pickle.HIGHEST_PROTOCOL)
        self._local = None if local_model is None else pickle.dumps(local_model, pickle.HIGHEST_PROTOCOL)

    def load(self) -> Tuple[int, Any, Any]:
        if self.version == 0:
            return 0, None, None
        gmodel = self._global if self._lazy else pickle.loads(self._global)
        lmodel = None if self._local is None else pickle.loads(self._local)
        return self.version, gmodel, lmodel


_ENGINES: Dict[str, Type[Engine]] = {}


def register(name: str) -> Callable[[Type[Engine]], Type[Engine]]:
    """Class decorator: make an engine available as ``collective.init(engine=name)``."""
    def wrap(cls: Type[Engine]) -> Type[Engine]:
        cls.name = name
        _ENGINES[name] = cls
        return cls
    return wrap


def create(name: str, **kwargs: Any) -> Engine:
    """Build the engine registered as ``name``."""
    if name not in _ENGINES:
        raise MXNetError(f"collective.init: unknown engine {name!r}; registered: {sorted(_ENGINES)}")
    return _ENGINES[name](**kwargs)
