"""Rabit's API: allreduce, broadcast and in-memory checkpoints over interchangeable engines.

A typical program (run with ``mpiexec -n 4 python prog.py`` or ``python -m mxref.tools.launch``)::

    from mxref import collective as rabit
    rabit.init()                                   # engine='mpi' by default
    version, model, _ = rabit.load_checkpoint()    # (0, None, None) on a fresh start
    for it in range(version, 10):
        grad = compute(model)                      # local work
        rabit.allreduce(grad, rabit.SUM)           # in place, identical on every rank
        model = update(model, grad)
        rabit.checkpoint(model)
    rabit.finalize()

Engines: ``mpi`` (mpi4py, fast, no fault tolerance), ``robust`` (TCP with a tracker; survives a
killed and restarted worker), ``local`` (threads of one process, see ``run_local``) and ``mock``
(injects failures at chosen ``(rank, version, seqno)``). Without ``init`` the calls act on a
one-rank world, as Rabit does.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..base import MXNetError
from . import local_engine as _local_engine  # noqa: F401 - registers 'local'
from .base import BITOR, MAX, MIN, PROD, SUM, Engine, create, parse_op, register
from .local_engine import run_local

__all__ = ["init", "finalize", "get_rank", "get_world_size", "is_distributed", "allreduce", "broadcast",
           "checkpoint", "lazy_checkpoint", "load_checkpoint", "version_number", "tracker_print",
           "SUM", "MAX", "MIN", "PROD", "BITOR", "run_local", "register", "Engine"]

_process_engine: Optional[Engine] = None


class _ThreadEngine(threading.local):
    """The engine bound to this thread (the local engine binds one rank per thread), else None.

    NOTE: a class attribute default, so that reading it in a thread that bound none finds None
    instead of raising (and catching) AttributeError: 1.1 us against 0.07 us on this machine,
    per call, where MPI's whole 4 KiB allreduce takes 6.5 us."""
    engine: Optional[Engine] = None


_tls = _ThreadEngine()


def _engine() -> Engine:
    eng = _tls.engine or _process_engine
    if eng is None:
        eng = _tls.engine = create("local")   # not initialised: a world of one, as Rabit
    return eng


def _load_engines() -> None:
    # Engines that import optional dependencies (mpi4py) register on first use.
    from . import mock_engine, mpi_engine, robust_engine  # noqa: F401


def init(engine: Optional[str] = None, **kwargs: Any) -> None:
    """Start the collective engine of this process (or of this thread, for ``'local'``).

    Parameters
    ----------
    engine : {'mpi', 'robust', 'local', 'mock'}, optional
        Default: ``$MXREF_COLLECTIVE_ENGINE``, else ``'robust'`` when started by the robust launcher
        (``$MXREF_TRACKER_URI`` is set), else ``'mpi'``.
    **kwargs
        Passed to the engine (``mock=[(rank, version, seqno)]``, ``ring_mincount=...``).
    """
    global _process_engine
    if engine is None:
        engine = os.environ.get("MXREF_COLLECTIVE_ENGINE") or (
            "robust" if os.environ.get("MXREF_TRACKER_URI") else "mpi")
    _load_engines()
    eng = create(engine, **kwargs)
    if getattr(eng, "thread_local", False):
        _tls.engine = eng
    else:
        _process_engine = eng


def finalize() -> None:
    """Shut the engine down (the robust engine first waits until no peer needs its caches)."""
    global _process_engine
    eng = _tls.engine
    if eng is not None:
        _tls.engine = None
    else:
        eng, _process_engine = _process_engine, None
    if eng is not None:
        eng.shutdown()


def get_rank() -> int:
    """This process's rank, ``0 .. get_world_size()-1``."""
    return _engine().rank


def get_world_size() -> int:
    """The number of ranks in the job."""
    return _engine().world_size


def is_distributed() -> bool:
    """True when the job has more than one rank."""
    return _engine().world_size > 1


def _flat_view(buf: Any, what: str) -> Tuple[np.ndarray, Optional[Any]]:
    """A flat numpy view sharing memory with ``buf``; NDArrays are first waited for."""
    if type(buf) is not np.ndarray and hasattr(buf, "wait_to_write") and hasattr(buf, "_data"):
        buf.wait_to_write()                                        # an mx.nd.NDArray
        return buf._data().reshape(-1), buf
    if type(buf) is np.ndarray and buf.ndim == 1 and buf.flags.c_contiguous and buf.flags.writeable:
        return buf, None                        # the common case, already flat
    if not isinstance(buf, np.ndarray):
        raise MXNetError(f"{what}: buf must be a numpy array or NDArray, got {type(buf).__name__}")
    if not buf.flags.c_contiguous or not buf.flags.writeable:
        raise MXNetError(f"{what}: buf must be a C-contiguous, writeable array (the result is written "
                         f"in place); got shape {buf.shape} with strides {buf.strides}")
    return buf.reshape(-1), None


def allreduce(buf: Any, op: Any, prepare_fun: Optional[Callable[[], None]] = None) -> Any:
    """Reduce ``buf`` over all ranks in place; every rank ends with the identical result.

    Parameters
    ----------
    buf : numpy.ndarray or NDArray
        Contiguous buffer, same size and dtype on every rank. An NDArray is waited for (all its
        pending reads and writes finish), reduced through its numpy view, and is readable at once
        afterwards: the call is synchronous, as Rabit's.
    op : SUM, MAX, MIN, PROD, BITOR or their names ('sum', ...)
    prepare_fun : callable, optional
        Fills ``buf`` lazily; the robust engine skips it when the result is replayed from its cache.

    Returns
    -------
    buf, for chaining.
    """
    eng = _tls.engine or _process_engine
    # NOTE: the common call (a plain, aligned, writeable, contiguous numpy array, an int op, no
    # prepare_fun) goes straight to the engine's plan for its shape, dtype and op: no flattening,
    # no parsing, no table look-up (LinkEngine.plan_allreduce; the plan flattens where needed).
    if type(buf) is np.ndarray and type(op) is int and prepare_fun is None and eng is not None \
            and eng.plans is not None and buf.flags.carray:
        key = (buf.shape, buf.dtype, op)
        (eng.plans.get(key) or eng.plan_allreduce(buf, op, key))(buf)
        return buf
    code = parse_op(op)
    flat, nd = _flat_view(buf, "allreduce")
    prep = prepare_fun
    if nd is not None and prepare_fun is not None:
        def prep():   # the user's code may push engine writes to the NDArray: wait for them
            prepare_fun()
            nd.wait_to_write()
    _engine().allreduce(flat, code, prep)
    return buf


def broadcast(obj: Any, root: int) -> Any:
    """Return ``root``'s ``obj`` on every rank.

    What the root passes decides: a numpy array or NDArray travels as raw bytes (no pickling) and
    lands in place in the array each other rank passes (same size and dtype), or in a new numpy
    array on ranks that pass ``None``; anything else (numbers, strings, bytes, lists, tuples,
    dicts of those and of arrays) travels in a data-only encoding (``codec.py``) and the other
    ranks (which may pass ``None``) get a copy. Other Python objects (class instances) are
    pickled only when every rank opted in (``MXREF_ALLOW_PICKLE=1``, or the robust engine's
    ``allow_pickle=True``); otherwise every rank raises ``MXNetError``. Array arguments are
    returned, filled.

    Examples
    --------
    >>> w = np.zeros(3) if rank != 0 else np.arange(3.0)
    >>> broadcast(w, 0)                          # in place on every rank
    >>> cfg = broadcast({"lr": 0.1} if rank == 0 else None, 0)
    """
    eng = _engine()
    if hasattr(obj, "wait_to_write") and hasattr(obj, "_data"):   # an NDArray: its shaped view
        obj.wait_to_write()
        eng.broadcast(obj._data(), int(root))
        return obj
    if isinstance(obj, np.ndarray) and eng.rank != root:
        _flat_view(obj, "broadcast")            # it will be written: must be contiguous, writeable
    return eng.broadcast(obj, int(root))


def checkpoint(global_model: Any, local_model: Any = None) -> None:
    """Store a new version of the models (in memory); ``version_number()`` grows by one.

    ``global_model`` must be the same on every rank; ``local_model`` is this rank's own state.
    """
    _engine().checkpoint(global_model, local_model)


def lazy_checkpoint(global_model: Any) -> None:
    """Like ``checkpoint`` but keeps a reference instead of a copy (no serialisation now).

    The model must not change until the next version's last collective, as in Rabit.
    """
    _engine().checkpoint(global_model, None, lazy=True)


def load_checkpoint() -> Tuple[int, Any, Any]:
    """``(version, global_model, local_model)``; ``(0, None, None)`` when nothing was checkpointed.

    A worker restarted by the robust engine gets the latest version from a surviving peer.
    """
    return _engine().load_checkpoint()


def version_number() -> int:
    """How many checkpoints have been taken (the iteration to resume from)."""
    return _engine().version_number()


def tracker_print(msg: str) -> None:
    """Print ``msg`` prefixed with this rank, flushed at once (the tracker's log in robust runs)."""
    _engine().tracker_print(str(msg))
