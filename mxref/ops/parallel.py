"""Intra-operator parallelism: split a kernel's batch or a GEMM over a few threads (MXNet's OpenMP loops).

MXNet runs a CPU operator's loops on ``OMP_NUM_THREADS`` OpenMP threads. mxref's kernels that
release the GIL (the Cython window kernels of ``mxref/_ext/nn_kernels.pyx``) get the same from
``parallel_for``: the batch ``[0, n)`` is cut into contiguous ranges, the calling thread (an engine
worker) runs the first and idle helper threads run the others. A helper never waits on anything
but its next range, and a caller takes only idle helpers (else it runs more itself), so two
engine workers calling at once cannot deadlock; they just share the threads.

The thread count is ``MXNET_OMP_MAX_THREADS``, else ``OMP_NUM_THREADS``, else the number of CPUs.
``run_concurrently`` runs a few independent calls (FullyConnected's two backward GEMMs) side by side
instead of splitting each. Importing this module also shortens the GIL's switch interval (below).
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Callable, List, Optional

import numpy as np

from . import blas

# Below this much work per thread (elements of a C loop) the hand-off (~20 µs) costs more than
# it saves.
MIN_WORK_PER_THREAD = 32768
# The same for a numpy elementwise pass (a ReLU of 128 x 512 runs in ~20 µs: not worth a thread).
MIN_ELEMENTS_PER_THREAD = 1 << 17


def _threads_from_env() -> int:
    for var in ("MXNET_OMP_MAX_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return os.cpu_count() or 1


# Read once (operators ask on every call, and os.environ lookups are not free on a hot path);
# assign ``mxref.ops.parallel.NUM_THREADS`` to change it at run time.
NUM_THREADS = _threads_from_env()

# With several operator threads, they (not OpenBLAS's own threads) run the GEMMs' parts: BLAS goes
# to one thread now, at import, so every GEMM of the process, split or not, runs the same way
# from the first step on (a switch at the first split would change the bits of later results).
SPLIT_GEMMS = NUM_THREADS > 1 and blas.split_enabled()
if SPLIT_GEMMS:
    blas.set_num_threads(1)


# --- the GIL's switch interval ---------------------------------------------------------------
# A thread that wants the GIL while another runs Python waits up to ``sys.getswitchinterval()``
# (CPython's default: 5 ms) before it may force a hand-over. An imperative training loop pushes a
# whole block of steps ahead of the engine, all Python, while the worker and the operator threads
# need the GIL for a few microseconds between their GEMMs: at 5 ms the worker all but stopped
# while the loop pushed, and a core idled (the MLP of ``benchmarks/bench_training.py``, 20 steps
# pushed in ~25 ms on a busy machine: 0-8 of their 400 kernel calls ran meanwhile at 5 ms, 30-90 at
# 100 µs). MXNet's engine runs without the GIL; here the
# interval goes down to ``MXREF_GIL_SWITCH_US`` (default 100 µs) at import, process-wide. Only a
# contended GIL changes hands more often. ``0`` leaves the interpreter's own interval.

def _switch_interval_from_env() -> Optional[float]:
    value = os.environ.get("MXREF_GIL_SWITCH_US", "100").strip()
    try:
        micros = float(value)
    except ValueError:
        micros = 100.0
    return micros * 1e-6 if micros > 0 else None


GIL_SWITCH_INTERVAL = _switch_interval_from_env()
if GIL_SWITCH_INTERVAL is not None:
    sys.setswitchinterval(GIL_SWITCH_INTERVAL + 5e-7)    # CPython keeps whole µs, rounded down


class _Helper:
    """One operator thread: it waits on ``start`` (a bare lock, released by the caller handing it
    a range), runs the range and releases ``done``. A caller holds ``busy`` while it uses the
    helper. Bare locks cost a few microseconds a hand-off; a ``ThreadPoolExecutor`` future (its
    Condition, queue and result wait) cost about 30 in the profile of a MobileNet step, which
    makes some 250 hand-offs."""

    def __init__(self, index: int):
        self.busy = threading.Lock()
        self.start = threading.Lock()
        self.done = threading.Lock()
        self.start.acquire()
        self.done.acquire()
        self.task = None
        self.error: Optional[BaseException] = None
        threading.Thread(target=self._loop, name=f"mxref-omp-{index}", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self.start.acquire()
            fn, lo, hi = self.task
            self.task = None
            try:
                fn(lo, hi)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, re-raised there
                self.error = exc
            self.done.release()


_helpers: List[_Helper] = []
_helpers_lock = threading.Lock()


def _grab(count: int) -> List[_Helper]:
    """Up to ``count`` idle helpers, marked busy (started on first need). Helpers another caller
    (a second engine worker) holds are skipped: that caller then runs more of its range itself,
    and the kernels' results do not depend on the split."""
    with _helpers_lock:
        while len(_helpers) < count:
            _helpers.append(_Helper(len(_helpers)))
        helpers = _helpers
    got = []
    for h in helpers:
        if len(got) == count:
            break
        if h.busy.acquire(blocking=False):
            got.append(h)
    return got


def _forget_helpers_in_child() -> None:
    # A forked child (a DataLoader worker) inherits the helper objects but not their threads.
    global _helpers, _helpers_lock
    _helpers, _helpers_lock = [], threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers_in_child)


def parallel_for(n: int, fn: Callable[[int, int], None], work_per_item: int = 1) -> None:
    """Call ``fn(lo, hi)`` over contiguous ranges covering ``[0, n)``, on up to ``NUM_THREADS``
    threads, and return when all are done; an exception from any range is re-raised here."""
    chunks = min(NUM_THREADS, n, max(1, n * work_per_item // MIN_WORK_PER_THREAD))
    if chunks <= 1:
        fn(0, n)
        return
    helpers = _grab(chunks - 1)
    chunks = len(helpers) + 1
    bounds = [n * i // chunks for i in range(chunks + 1)]
    for i, h in enumerate(helpers, 1):
        h.task = (fn, bounds[i], bounds[i + 1])
        h.start.release()
    error = None
    try:
        fn(bounds[0], bounds[1])
    finally:
        for h in helpers:
            h.done.acquire()
            error, h.error = error or h.error, None
            h.busy.release()
    if error is not None:
        raise error


def parallel_elementwise(fn: Callable[..., None], *arrays) -> None:
    """Call ``fn(*parts)`` on matching flat ranges of ``arrays`` over the operator threads (numpy's
    ufunc loops release the GIL), or once on the whole arrays when they are not all C-contiguous
    and of one size (a strided view cannot be cut into flat ranges)."""
    size = arrays[0].size
    # Most calls are small (the check costs less than a thread hand-off would): run them at once.
    if size < 2 * MIN_ELEMENTS_PER_THREAD or NUM_THREADS == 1 or \
            not all(a.flags.c_contiguous and a.size == size for a in arrays):
        fn(*arrays)
        return
    flat = [a.reshape(-1) for a in arrays]
    parallel_for(size, lambda lo, hi: fn(*(a[lo:hi] for a in flat)))


# A GEMM smaller than this (multiply-adds) is not worth splitting.
MIN_GEMM_PER_THREAD = 1 << 20


def parallel_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = a @ b`` (2-D), the rows of ``a`` or the columns of ``b`` split over the operator
    threads, each part one single-threaded BLAS call (see ``mxref/ops/blas.py``)."""
    m, k = a.shape
    n = b.shape[1]
    if not SPLIT_GEMMS or m * n * k < 2 * MIN_GEMM_PER_THREAD:
        return np.matmul(a, b, out=out)
    if m >= n:
        parallel_for(m, lambda lo, hi: np.matmul(a[lo:hi], b, out=out[lo:hi]), work_per_item=n * k)
    else:
        parallel_for(n, lambda lo, hi: np.matmul(a, b[:, lo:hi], out=out[:, lo:hi]), work_per_item=m * k)
    return out


def run_concurrently(*calls: Callable[[], None]) -> None:
    """Run ``calls`` side by side, the first on the calling thread and the others on idle operator
    threads (any the caller cannot get, it runs itself), and return when all are done; an exception
    from any is re-raised here.

    For independent pieces of one operator that each use one thread (FullyConnected's ``dx`` and
    ``dW`` GEMMs): one hand-off for all of them, each GEMM whole."""
    if len(calls) == 1:
        calls[0]()
        return

    def run(lo: int, hi: int) -> None:
        for call in calls[lo:hi]:
            call()
    parallel_for(len(calls), run, work_per_item=MIN_WORK_PER_THREAD)


def concurrent_gemms(*shapes) -> bool:
    """Whether GEMMs of ``(m, k, n)`` ``shapes``, independent of each other, should run side by side
    (each whole, ``run_concurrently``) rather than one after the other, each split: when there
    are as many as operator threads, and each is big enough that it would have been split."""
    return SPLIT_GEMMS and len(shapes) >= NUM_THREADS and \
        all(m * k * n >= 2 * MIN_GEMM_PER_THREAD for m, k, n in shapes)
