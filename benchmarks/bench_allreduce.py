"""Allreduce latency and bandwidth, 4 KiB..64 MiB: mxref against mpi4py's ``Allreduce``, side by side.

One command measures every world size and prints one table (it starts the jobs itself, on
loopback only: ``mpiexec -launcher fork -iface lo``, ``FI_TCP_IFACE=lo``)::

    .venv/bin/python benchmarks/bench_allreduce.py --worlds 2 4              # mpi engine vs MPI
    .venv/bin/python benchmarks/bench_allreduce.py --worlds 2 4 --robust     # + the robust engine
    .venv/bin/python benchmarks/bench_allreduce.py --worlds 2 3 4 --tune     # + every algorithm bare

Inside one job (what the driver runs)::

    FI_TCP_IFACE=lo .venv/bin/mpiexec -launcher fork -iface lo -n 4 \
        .venv/bin/python benchmarks/bench_allreduce.py
    .venv/bin/python -m mxref.tools.launch -n 4 --engine robust -- \
        .venv/bin/python benchmarks/bench_allreduce.py

Under mpiexec each size is timed with MPI's own ``Allreduce`` (``mpi``), mxref's public
``collective.allreduce`` (``mxref``: the measured algorithm table plus the agreement check, as a
program gets it) and the same engine with the check off (``nocheck``); with ``--tune`` also every
algorithm called bare, and the fastest per size is printed as a table for
``MXREF_COLLECTIVE_ALLREDUCE`` / ``selection.DEFAULT_TABLES``. Under the robust launcher the
robust engine is timed (its per-call consensus header, input copy and result cache). The forms
alternate within each round (machine drift hits them alike); a cell is the median over rounds of
the per-round median of single back-to-back calls (a barrier starts each round), and the slowest
rank's value. Ratio = MPI's time / mxref's time: above 1 mxref is faster. The machine is shared, so the
load average is printed with the results.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from mxref import collective  # noqa: E402
from mxref.collective import selection  # noqa: E402
from mxref.collective.base import SUM  # noqa: E402

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def measure(forms, barrier, agree_max, rounds, budget):
    """``{name: seconds}``: median over ``rounds`` of each form's median single-call time."""
    reps = {}
    for name, fn in forms.items():
        fn()
        barrier()
        t = time.perf_counter()
        fn()
        one = time.perf_counter() - t
        reps[name] = int(agree_max(max(3, min(400, int(budget / rounds / max(one, 1e-6))))))
    per_round = {name: [] for name in forms}
    for _ in range(rounds):
        for name, fn in forms.items():
            # NOTE: no barrier between the calls of a round: back-to-back calls pace each other
            # through their messages (as in a training loop), and a barrier per call, which
            # busy-polls in MPI, made every call pay for the other rank's wake-up on a loaded machine.
            barrier()
            times = []
            t = time.perf_counter()
            for _ in range(reps[name]):
                fn()
                now = time.perf_counter()
                times.append(now - t)
                t = now
            per_round[name].append(statistics.median(times))
    return {name: agree_max(statistics.median(v)) for name, v in per_round.items()}


def run_mpi_job(args):
    from mpi4py import MPI

    from mxref.collective.mpi_engine import MPIEngine
    comm = MPI.COMM_WORLD
    collective.init("mpi")
    eng = collective._engine()
    bare = MPIEngine(check=False)
    world = eng.world_size
    results = []
    for nbytes in [s for s in SIZES if s <= args.max_bytes]:
        buf = np.zeros(nbytes // 4, np.float32)     # zeros: repeated sums stay the same
        out = np.empty_like(buf)
        forms = {"mpi": lambda buf=buf, out=out: comm.Allreduce(buf, out),
                 "mxref": lambda buf=buf: collective.allreduce(buf, SUM),
                 "nocheck": lambda buf=buf: bare.allreduce(buf, SUM)}
        if args.tune:
            for algo in selection.ALGORITHMS:
                if algo != "tree" or nbytes <= 1 << 20:      # the tree loses by 4-13x above 1 MiB
                    forms[algo] = lambda algo=algo, buf=buf: selection.run(eng.link, algo, buf, np.add)
        t = measure(forms, comm.Barrier, lambda x: comm.allreduce(x, MPI.MAX), args.rounds, args.budget)
        results.append({"bytes": nbytes, "algorithm": eng.table.choose(nbytes, buf.size, world),
                        **{k: v * 1e6 for k, v in t.items()}})
    bare.shutdown()
    collective.finalize()
    return world, results


def run_robust_job(args):
    collective.init("robust")
    world = collective.get_world_size()

    def agree_max(x):
        a = np.array([x], np.float64)
        collective.allreduce(a, collective.MAX)
        return type(x)(a[0])
    results = []
    for nbytes in [s for s in SIZES if s <= args.max_bytes]:
        buf = np.zeros(nbytes // 4, np.float32)
        t = measure({"robust": lambda buf=buf: collective.allreduce(buf, SUM)},
                    lambda: collective.allreduce(np.zeros(1), SUM), agree_max, args.rounds, args.budget)
        results.append({"bytes": nbytes, "robust": t["robust"] * 1e6})
    collective.finalize()
    return world, results


def print_table(world, rows):
    """One job's table (markdown), rank 0 only."""
    names = [k for k in rows[0] if k not in ("bytes", "algorithm")]
    print(f"W={world}")
    print("| bytes | algorithm | " + " | ".join(f"{n} µs" for n in names)
          + (" | MPI/mxref | MPI/nocheck |" if "mpi" in names else " |"))
    print("|---" * (2 + len(names) + (2 if "mpi" in names else 0)) + "|")
    for r in rows:
        cells = " | ".join(f"{r[n]:.1f}" if n in r else "—" for n in names)
        ratios = f" | {r['mpi'] / r['mxref']:.2f} | {r['mpi'] / r['nocheck']:.2f}" if "mpi" in r else ""
        print(f"| {r['bytes']} | {r.get('algorithm', '')} | {cells}{ratios} |", flush=True)
    algos = [a for a in selection.ALGORITHMS if a in rows[0]]
    if algos:
        best = [(r["bytes"], min((a for a in algos if a in r), key=r.get)) for r in rows]
        table = []
        for nbytes, algo in best:
            if table and table[-1][1] == algo:
                table[-1] = (nbytes, algo)
            else:
                table.append((nbytes, algo))
        print("fastest per size:", ",".join([f"{a}:{n}" for n, a in table[:-1]] + [table[-1][1]]))


def drive(args, passthrough):
    """Run one mpiexec job (and one robust job) per world size; print everything side by side."""
    from mxref.tools import loopback
    py = sys.executable
    mpiexec = os.path.join(os.path.dirname(py), "mpiexec")
    env = loopback.loopback_env(dict(os.environ, PYTHONPATH=ROOT))
    load0 = os.getloadavg()
    merged = []
    with tempfile.TemporaryDirectory(prefix="mxref-bench-") as tmp:
        for w in args.worlds:
            jobs = [("mpi", [mpiexec, *loopback.MPIEXEC_FLAGS, "-n", str(w)])]
            if args.robust:
                jobs.append(("robust", [py, "-m", "mxref.tools.launch", "-n", str(w), "--engine", "robust",
                                        "--"]))
            rows = None
            for kind, prefix in jobs:
                out = os.path.join(tmp, f"{kind}{w}.json")
                cmd = [*prefix, py, os.path.abspath(__file__), "--json", out, *passthrough]
                proc = subprocess.run(cmd, env=env, cwd=ROOT, timeout=args.job_timeout)
                if proc.returncode:
                    raise SystemExit(f"{kind} job with {w} ranks failed ({proc.returncode})")
                got = json.load(open(out))["rows"]
                rows = got if rows is None else [dict(a, **b) for a, b in zip(rows, got)]
            merged.append((w, rows))
    load1 = os.getloadavg()
    print(f"\nload average before {load0[0]:.1f}, after {load1[0]:.1f} ({os.cpu_count()} cores); "
          f"{args.rounds} rounds, medians; ratio = MPI time / mxref time")
    print("| W | bytes | algorithm | MPI µs | mxref µs | MPI/mxref | nocheck µs | MPI/nocheck |"
          + (" robust µs | robust − mpi engine µs |" if args.robust else ""))
    print("|---" * (8 + (2 if args.robust else 0)) + "|")
    for w, rows in merged:
        for r in rows:
            line = (f"| {w} | {r['bytes']} | {r['algorithm']} | {r['mpi']:.1f} | {r['mxref']:.1f} | "
                    f"{r['mpi'] / r['mxref']:.2f} | {r['nocheck']:.1f} | {r['mpi'] / r['nocheck']:.2f} |")
            if args.robust:
                line += f" {r['robust']:.1f} | {r['robust'] - r['mxref']:+.1f} |"
            print(line)
    if args.tune:
        for w, rows in merged:
            print_table(w, [{k: v for k, v in r.items() if k in selection.ALGORITHMS or k == "bytes"}
                            for r in rows])


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
    p.add_argument("--worlds", type=int, nargs="*", help="driver: run a job per world size, print one table")
    p.add_argument("--robust", action="store_true", help="driver: also time the robust engine")
    p.add_argument("--tune", action="store_true", help="also time every algorithm bare; print the fastest")
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--budget", type=float, default=1.0, help="seconds of calls per form and size")
    p.add_argument("--job-timeout", type=float, default=1800)
    p.add_argument("--json", default=None, help="write rank 0's rows here")
    p.add_argument("--recovery", type=int, default=0, metavar="BYTES",
                   help="robust launcher: time a killed worker's recovery with a model of BYTES")
    args = p.parse_args()
    if args.recovery:
        return recovery(args.recovery)
    if args.worlds:
        passthrough = ["--max-bytes", str(args.max_bytes), "--rounds", str(args.rounds),
                       "--budget", str(args.budget)] + (["--tune"] if args.tune else [])
        return drive(args, passthrough)
    robust = bool(os.environ.get("MXREF_TRACKER_URI"))
    world, rows = run_robust_job(args) if robust else run_mpi_job(args)
    if int(os.environ.get("MXREF_RANK", os.environ.get("PMI_RANK", 0))) == 0:
        print_table(world, rows)
        print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"world": world, "rows": rows}, f)


main()
