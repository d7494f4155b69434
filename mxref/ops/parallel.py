"""Intra-operator parallelism: split a kernel's batch or a GEMM over a few threads (MXNet's OpenMP loops).

MXNet runs a CPU operator's loops on ``OMP_NUM_THREADS`` OpenMP threads. mxref's kernels that
release the GIL (the Cython window kernels of ``mxref/_ext/nn_kernels.pyx``) get the same from
``parallel_for``: the batch ``[0, n)`` is cut into contiguous ranges, the calling thread (an engine
worker) runs the first and a small shared pool runs the others. The pool's threads never wait on
anything, so two engine workers calling at once cannot deadlock; they just share the threads.

The thread count is ``MXNET_OMP_MAX_THREADS``, else ``OMP_NUM_THREADS``, else the number of CPUs.
``run_concurrently`` runs a few independent calls (FullyConnected's two backward GEMMs) side by side
instead of splitting each. Importing this module also shortens the GIL's switch interval (below).
"""
from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

import numpy as np

from . import blas

# Below this much work per thread (elements of a C loop) the hand-off (~20 µs) costs more than
# it saves.
MIN_WORK_PER_THREAD = 32768
# The same for a numpy elementwise pass (a ReLU of 128 x 512 runs in ~20 µs: not worth a thread).
MIN_ELEMENTS_PER_THREAD = 1 << 17

_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


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


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers < workers:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mxref-omp")
        return _pool


def _forget_pool_in_child() -> None:
    # A forked child (a DataLoader worker) inherits the pool object but not its threads.
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def parallel_for(n: int, fn: Callable[[int, int], None], work_per_item: int = 1) -> None:
    """Call ``fn(lo, hi)`` over contiguous ranges covering ``[0, n)``, on up to ``NUM_THREADS``
    threads, and return when all are done; an exception from any range is re-raised here."""
    chunks = min(NUM_THREADS, n, max(1, n * work_per_item // MIN_WORK_PER_THREAD))
    if chunks <= 1:
        fn(0, n)
        return
    bounds = [n * i // chunks for i in range(chunks + 1)]
    pool = _get_pool(chunks - 1)
    futures = [pool.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, chunks)]
    try:
        fn(bounds[0], bounds[1])
    finally:
        for f in futures:
            f.result()


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
    """Run ``calls`` side by side, the first on the calling thread and each other one on a pool
    thread, and return when all are done; an exception from any is re-raised here.

    For independent pieces of one operator that each use one thread (FullyConnected's ``dx`` and
    ``dW`` GEMMs): one hand-off for all of them, each GEMM whole. The pieces must not call
    ``parallel_for`` themselves: a pool thread never waits on the pool."""
    if len(calls) == 1:
        calls[0]()
        return
    futures = [_get_pool(len(calls) - 1).submit(c) for c in calls[1:]]
    try:
        calls[0]()
    finally:
        for f in futures:
            f.result()


def concurrent_gemms(*shapes) -> bool:
    """Whether GEMMs of ``(m, k, n)`` ``shapes``, independent of each other, should run side by side
    (each whole, ``run_concurrently``) rather than one after the other, each split: when there
    are as many as operator threads, and each is big enough that it would have been split."""
    return SPLIT_GEMMS and len(shapes) >= NUM_THREADS and \
        all(m * k * n >= 2 * MIN_GEMM_PER_THREAD for m, k, n in shapes)
