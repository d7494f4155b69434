"""The collective engine interface, the reduce operators, the point-to-point ``Link`` and the registry."""
from __future__ import annotations

import functools
import pickle
import sys
import time
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
    if type(op) is int and op in _UFUNCS:     # the common call, rabit.SUM: no further checks
        return op
    if isinstance(op, str):
        code = _OP_NAMES.get(op.lower())
    elif isinstance(op, (int, np.integer)) and int(op) in _UFUNCS:
        code = int(op)
    else:
        code = None
    if code is None:
        raise MXNetError(f"allreduce: unknown op {op!r}; use one of sum, max, min, prod, bitor")
    return code


def reduce_ufunc(op: int, dtype: np.dtype) -> np.ufunc:
    """The binary ufunc that reduces with the operator ``op`` on ``dtype`` (checked)."""
    dtype = np.dtype(dtype)
    if op == BITOR and dtype.kind not in "iub":
        raise MXNetError(f"allreduce: op bitor needs an integer or bool buffer, got dtype {dtype}")
    if dtype.kind == "b" and op in (SUM, PROD):
        # NOTE: numpy's add/multiply on bools are or/and; say so instead of surprising.
        return np.logical_or if op == SUM else np.logical_and
    return _UFUNCS[op]


def reducer(op: int, dtype: np.dtype) -> Callable[[np.ndarray, np.ndarray], None]:
    """``f(dst, src)`` that folds ``src`` into ``dst`` in place with the operator ``op``."""
    ufunc = reduce_ufunc(op, dtype)

    def fold(dst: np.ndarray, src: np.ndarray) -> None:
        ufunc(dst, src, out=dst)
    return fold


class LinkError(MXNetError):
    """A peer went away in the middle of a message (the robust engine recovers from this)."""


class LinkRequest:
    """A non-blocking send or receive in flight (``Link.isend`` / ``Link.irecv``).

    ``test()`` is True once it finished: a send's buffer may then be reused, a receive's buffer
    holds the message. ``wait()`` blocks until then.
    """

    def test(self) -> bool:
        raise NotImplementedError

    def wait(self, timeout: Optional[float] = None) -> None:
        """Block until ``test()`` is True; ``MXNetError`` after ``timeout`` seconds (None: never)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 1e-5
        while not self.test():
            if deadline is not None and time.monotonic() > deadline:
                raise MXNetError(f"link: request not finished within {timeout:g}s")
            time.sleep(delay)
            delay = min(2 * delay, 1e-3)


class DoneRequest(LinkRequest):
    """A request that finished when it was made (a send that copied its buffer, say)."""

    def test(self) -> bool:
        return True


def _nothing() -> None:
    pass


class Link:
    """Point-to-point messages between the ranks of one job: the one message layer of mxref.

    The collective's algorithms and the parameter server (``mxref.kvstore.ps``) both speak
    through it. A message is the bytes of one contiguous numpy buffer (any dtype: the bytes
    travel, so a receiver may use another dtype's view of the same size) sent to one peer with
    an integer ``tag``; ``recv`` fills its buffer in place and sender and receiver must agree on
    the byte count. Messages from one sender to one receiver with one tag arrive in the order
    sent; different tags are independent streams, so a receive on one tag never takes a message
    of another.

    Implementations: MPI (``mpi_engine.MPILink``, mpi4py's buffer interface), TCP sockets
    (``transport.SocketLink``) and threads of one process (``local_engine.LocalLink``, queues).
    The non-blocking half (``isend``, ``irecv``, ``probe``) is what one thread serving many
    peers needs (the parameter server's communication thread).
    """
    rank: int = 0
    world_size: int = 1
    kind: str = "link"      # how errors name the transport: "MPI", "TCP", "in-process"

    def send(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        """Send ``buf`` to ``peer``; may return before it arrived (the buffer is free again)."""
        raise NotImplementedError

    def recv(self, peer: int, buf: np.ndarray, tag: int = 0) -> None:
        """Receive the next message from ``peer`` with ``tag`` into ``buf`` (same byte count)."""
        raise NotImplementedError

    def sendrecv(self, send_peer: int, send_buf: np.ndarray, recv_peer: int, recv_buf: np.ndarray,
                 tag: int = 0) -> None:
        """Send and receive at once; a ring step must not deadlock when every rank sends first."""
        raise NotImplementedError

    def prepare(self, buf: np.ndarray) -> Any:
        """``buf`` in the form ``sendrecv_prepared`` takes; made once for a buffer used many times."""
        return buf

    def sendrecv_prepared(self, send_peer: int, send_msg: Any, recv_peer: int, recv_msg: Any) -> None:
        """``sendrecv`` of buffers made ready by ``prepare`` (tag 0); links may skip per-call work."""
        self.sendrecv(send_peer, send_msg, recv_peer, recv_msg)

    def bind_sendrecv(self, send_peer: int, send_msg: Any, recv_peer: int,
                      recv_msg: Any) -> Tuple[Callable[[], None], Callable[[], None]]:
        """``sendrecv_prepared`` of these four arguments as two callables without arguments, start
        and finish, to call in that order: for a plan that repeats the same exchange every call.
        The buffers must stay the same objects while the pair is in use (a link may make
        persistent requests on them); this default sends and receives in ``start``."""
        return functools.partial(self.sendrecv_prepared, send_peer, send_msg, recv_peer, recv_msg), _nothing

    def isend(self, peer: int, buf: np.ndarray, tag: int = 0) -> LinkRequest:
        """Start sending ``buf``; it must not change until the request's ``test()`` is True."""
        raise NotImplementedError(f"{type(self).__name__} has no non-blocking send")

    def irecv(self, peer: int, buf: np.ndarray, tag: int = 0) -> LinkRequest:
        """Start receiving the next message from ``peer`` with ``tag`` into ``buf``.

        Receives posted on one (peer, tag) are matched to messages in the order they were posted.
        """
        raise NotImplementedError(f"{type(self).__name__} has no non-blocking receive")

    def probe(self, tag: int) -> Optional[Tuple[int, int]]:
        """``(peer, nbytes)`` of a message with ``tag`` that has arrived and that no posted receive
        will take, from any peer; None if there is none. Nothing is received."""
        raise NotImplementedError(f"{type(self).__name__} cannot probe")

    def close(self) -> None:
        pass


def as_bytes(buf: np.ndarray) -> np.ndarray:
    """The flat ``uint8`` view of a contiguous buffer (what every link actually moves)."""
    if not buf.flags.c_contiguous:
        raise MXNetError("link: message buffers must be contiguous")
    return buf.reshape(-1).view(np.uint8)


class Engine:
    """What every collective engine offers; the module-level functions of ``mxref.collective`` call it.

    Buffers handed to ``allreduce`` are flat, contiguous numpy arrays (the API layer flattens and
    waits for NDArrays). ``broadcast`` moves arbitrary picklable objects.
    """
    name = "base"
    rank: int = 0
    world_size: int = 1
    # ``{(shape, dtype, op): plan}``: an engine that sets it (and has ``plan_allreduce(buf, op,
    # key)``, which makes and stores a missing plan) lets the API call ``plan(buf)`` instead of
    # ``allreduce`` for a C-contiguous, aligned, writeable numpy ``buf`` and no ``prepare_fun``:
    # a plan is one call's set-up done once (``LinkEngine.plan_allreduce``).
    plans: Optional[Dict[tuple, Callable[[np.ndarray], None]]] = None

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
        # NOTE: one write of whole lines, each tagged with the rank: print() writes the text and
        # the newline separately, and another thread's output can land between the two.
        sys.stdout.write("".join(f"[{self.rank}] {line}\n" for line in str(msg).split("\n")))
        sys.stdout.flush()

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
