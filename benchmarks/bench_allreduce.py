"""Allreduce bus bandwidth and latency, 4 KB..64 MB: mxref ring / tree against mpi4py's ``Allreduce``.

Run (loopback only)::

    FI_TCP_IFACE=lo .venv/bin/mpiexec -launcher fork -iface lo -n 4 \
        .venv/bin/python benchmarks/bench_allreduce.py
    .venv/bin/python -m mxref.tools.launch -n 4 --engine robust -- \
        .venv/bin/python benchmarks/bench_allreduce.py

Under mpiexec every size is timed with MPI's own ``Allreduce`` (the limit), then mxref's ring and
tree forced, then the automatic choice; under the robust launcher the robust engine is timed (its
overhead: a header allgather and a copy per call). Bus bandwidth = 2(W-1)/W · bytes / time, the
bytes each link must carry, so numbers compare across world sizes. Each cell is the best of the
repeats (the machine this was written on is shared: the minimum is the stable estimate of what
the code can do, the median mostly measures the neighbours). Rank 0 prints a markdown table.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from mxref import collective  # noqa: E402
from mxref.collective import algorithms  # noqa: E402
from mxref.collective.base import SUM, reducer  # noqa: E402

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def timeit(fn, barrier, budget):
    """Best seconds per call over repeats filling ``budget`` seconds (all ranks agree on the count)."""
    fn()
    barrier()
    t0 = time.perf_counter()
    fn()
    reps = np.array([max(3, min(200, int(budget / max(time.perf_counter() - t0, 1e-6))))], np.int64)
    reps = int(collective_max(reps))
    times = []
    for _ in range(reps):
        barrier()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.min(times))


def collective_max(a):
    collective.allreduce(a, collective.MAX)
    return a[0]


def recovery(model_bytes: int) -> None:
    """Robust launcher only: rank 1 dies after checkpoint 2; its successor times the catch-up.

    Printed: seconds from the restarted process's ``init`` to the end of ``load_checkpoint``
    (rendezvous + checkpoint transfer), and to the end of the first replayed call.
    """
    import signal
    t_start = time.perf_counter()
    collective.init()
    rank = collective.get_rank()
    version, model, _ = collective.load_checkpoint()
    t_loaded = time.perf_counter()
    if model is None:
        model = np.zeros(model_bytes // 4, np.float32)
    for it in range(version, 4):
        grad = np.ones(1024, np.float32)
        collective.allreduce(grad, SUM)
        if version > 0 and it == version:
            print(f"recovery model {model_bytes} B: load_checkpoint {t_loaded - t_start:.3f} s, "
                  f"first call {time.perf_counter() - t_start:.3f} s", flush=True)
        if it == 2 and rank == 1 and os.environ.get("MXREF_NUM_ATTEMPT") == "0":
            os.kill(os.getpid(), signal.SIGKILL)
        model += 1
        collective.checkpoint(model)
    collective.finalize()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--budget", type=float, default=0.3, help="seconds of repeats per measurement")
    p.add_argument("--recovery", type=int, default=0, metavar="BYTES",
                   help="robust launcher: time a killed worker's recovery with a model of BYTES")
    args = p.parse_args()
    if args.recovery:
        return recovery(args.recovery)
    robust = bool(os.environ.get("MXREF_TRACKER_URI"))
    collective.init("robust" if robust else "mpi")
    eng = collective._engine()
    world, rank = eng.world_size, eng.rank
    sizes = [s for s in SIZES if s <= args.max_bytes]
    rows = []
    if robust:
        def barrier():
            collective.allreduce(np.zeros(1), SUM)
        for nbytes in sizes:
            buf = np.zeros(nbytes // 4, np.float32)
            t = timeit(lambda buf=buf: collective.allreduce(buf, SUM), barrier, args.budget)
            rows.append((nbytes, {"robust": t}))
    else:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        link, fold = eng.link, reducer(SUM, np.float32)
        for nbytes in sizes:
            buf = np.zeros(nbytes // 4, np.float32)
            out = np.empty_like(buf)
            t = {"mpi": timeit(lambda buf=buf, out=out: comm.Allreduce(buf, out), comm.Barrier, args.budget),
                 "ring": timeit(lambda buf=buf: algorithms.ring_allreduce(link, buf, fold), comm.Barrier,
                                args.budget),
                 "tree": timeit(lambda buf=buf: algorithms.tree_allreduce(link, buf, fold, eng.chunk_bytes),
                                comm.Barrier, args.budget),
                 "auto": timeit(lambda buf=buf: collective.allreduce(buf, SUM), comm.Barrier, args.budget)}
            rows.append((nbytes, t))
    if rank == 0:
        names = list(rows[0][1])
        print(f"W={world} ({'robust engine, TCP' if robust else 'mpi engine'})")
        print("| bytes | " + " | ".join(f"{n} µs | {n} GB/s" for n in names)
              + ("" if robust else " | best mxref / MPI bw") + " |")
        print("|---" * (1 + 2 * len(names) + (0 if robust else 1)) + "|")
        for nbytes, t in rows:
            bus = {n: 2 * (world - 1) / world * nbytes / t[n] / 1e9 if world > 1 else 0.0 for n in names}
            cells = " | ".join(f"{t[n] * 1e6:.0f} | {bus[n]:.2f}" for n in names)
            ratio = "" if robust else f" | {t['mpi'] / min(t['ring'], t['tree']):.2f}"
            print(f"| {nbytes} | {cells}{ratio} |", flush=True)
    collective.finalize()


main()
