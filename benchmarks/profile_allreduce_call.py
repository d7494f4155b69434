"""Where a small allreduce's microseconds go, 2 ranks: MPI's own call, the bare messages, and
mxref's layers one by one, side by side in one job.

    .venv/bin/python benchmarks/profile_allreduce_call.py            # starts mpiexec -n 2 itself
    .venv/bin/python benchmarks/profile_allreduce_call.py --bytes 16384 --rounds 15

Each form is timed as the median of single back-to-back calls over a round, the forms alternate
within each round (machine drift hits them alike), and a cell is the median over rounds on the
slowest rank. The forms, fastest first in principle:

* ``Sendrecv header+payload``: one mpi4py ``Sendrecv`` of the fused message (80-byte header and
  the payload), no fold: the floor of any Python allreduce over MPI point-to-point;
* ``persistent Startall/Waitall``: the same exchange over persistent requests made once;
* ``+ fold``: the floor plus the reduction ``np.add(theirs, mine, buf)``;
* ``plan``: the engine's plan for the call, called directly (header, copy, exchange, compare, fold);
* ``engine.allreduce``: the plan found through the engine's dict;
* ``collective.allreduce``: the public call (the API's checks and the plan);
* ``nocheck``: an engine with the agreement check off, public call path of the engine;
* ``comm.Allreduce``: MPI's own.

Then the Python pieces of the plan, timed alone on rank 0 with ``time.thread_time`` (CPU time of
this thread: other processes on the machine do not count), in nanoseconds per call.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)


def timed(forms, barrier, rounds, calls):
    per_round = {name: [] for name in forms}
    for _ in range(rounds):
        for name, fn in forms.items():
            barrier()
            times = []
            t = time.perf_counter()
            for _ in range(calls):
                fn()
                now = time.perf_counter()
                times.append(now - t)
                t = now
            per_round[name].append(statistics.median(times))
    return {name: statistics.median(v) for name, v in per_round.items()}


def pieces(buf, plan_parts, n=20000):
    """CPU ns per call of each Python piece of a fused 2-rank plan (no messages)."""
    head, packed, mine, theirs, out_mv, inc_mv, plans, key = plan_parts
    out = {}
    stmts = {
        "plans.get((shape, dtype, op))": lambda: plans.get((buf.shape, buf.dtype, 2)),
        "buf.flags.carray": lambda: buf.flags.carray,
        "header bytes into place": lambda: head.__setitem__(slice(None), packed),
        "payload copy (mine[...] = buf)": lambda: mine.__setitem__(Ellipsis, buf),
        "72-byte header compare": lambda: out_mv != inc_mv,
        "fold np.add(theirs, mine, buf)": lambda: np.add(theirs, mine, buf),
        "empty lambda (loop overhead)": lambda: None,
    }
    for name, fn in stmts.items():
        best = None
        for _ in range(5):
            t = time.thread_time()
            for _ in range(n):
                fn()
            dt = (time.thread_time() - t) / n
            best = dt if best is None else min(best, dt)
        out[name] = best * 1e9
    return out


def job(args):
    from mpi4py import MPI

    from mxref import collective
    from mxref.collective.base import SUM
    from mxref.collective.mpi_engine import MPIEngine
    comm = MPI.COMM_WORLD
    if comm.Get_size() != 2:
        raise SystemExit("run on 2 ranks")
    collective.init("mpi")
    eng = collective._engine()
    bare = MPIEngine(check=False)
    rank, peer = comm.Get_rank(), 1 - comm.Get_rank()
    buf = np.zeros(args.bytes // 4, np.float32)
    out = np.empty_like(buf)
    collective.allreduce(buf, SUM)                 # makes the plan
    key = (buf.shape, buf.dtype, SUM)
    plan = eng.plans[key]
    raw = MPI.COMM_WORLD.Dup()
    msg, inc = np.zeros(80 + buf.nbytes, np.uint8), np.zeros(80 + buf.nbytes, np.uint8)
    mine, theirs = msg[80:].view(np.float32), inc[80:].view(np.float32)
    smsg, rmsg = [msg, MPI.BYTE], [inc, MPI.BYTE]
    reqs = [raw.Recv_init(rmsg, peer, 9), raw.Send_init(smsg, peer, 9)]
    startall, waitall = MPI.Prequest.Startall, MPI.Request.Waitall

    def persistent():
        startall(reqs)
        waitall(reqs)

    forms = {
        "Sendrecv header+payload": lambda: raw.Sendrecv(smsg, peer, 7, rmsg, peer, 7),
        "persistent Startall/Waitall": persistent,
        "Sendrecv + fold": lambda: (raw.Sendrecv(smsg, peer, 7, rmsg, peer, 7), np.add(theirs, mine, buf)),
        "plan": lambda: plan(buf),
        "engine.allreduce": lambda: eng.allreduce(buf, SUM),
        "collective.allreduce": lambda: collective.allreduce(buf, SUM),
        "nocheck (engine.allreduce)": lambda: bare.allreduce(buf, SUM),
        "comm.Allreduce": lambda: comm.Allreduce(buf, out),
    }
    for fn in forms.values():
        fn()
    t = timed(forms, comm.Barrier, args.rounds, args.calls)
    t = {k: comm.allreduce(v, MPI.MAX) for k, v in t.items()}
    chk = eng._checked
    parts = (chk._out_head_mv, bytes(chk._out_head_mv), mine, theirs, chk._out_mv, chk._inc_mv,
             eng.plans, key)
    if rank == 0:
        print(f"W=2, {args.bytes} bytes float32 sum, {args.rounds} rounds of {args.calls} calls, "
              f"load average {os.getloadavg()[0]:.1f}")
        print("| form | µs |\n|---|---:|")
        for k, v in t.items():
            print(f"| {k} | {v * 1e6:.2f} |")
        print("\n| Python piece (rank 0, CPU time) | ns |\n|---|---:|")
        for k, v in pieces(buf, parts).items():
            print(f"| {k} | {v:.0f} |")
    reqs[0].Free()
    reqs[1].Free()
    raw.Free()
    bare.shutdown()
    collective.finalize()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bytes", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--calls", type=int, default=300)
    args, _ = p.parse_known_args()
    if "PMI_RANK" in os.environ:
        return job(args)
    from mxref.tools import loopback
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    env = loopback.loopback_env(dict(os.environ, PYTHONPATH=ROOT))
    subprocess.run([mpiexec, *loopback.MPIEXEC_FLAGS, "-n", "2", sys.executable, os.path.abspath(__file__),
                    *sys.argv[1:]], env=env, cwd=ROOT, timeout=300, check=True)


main()
