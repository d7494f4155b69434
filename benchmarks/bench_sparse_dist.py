"""``dist_sync`` with a row_sparse embedding on loopback: mxref sparse vs mxref dense vs MXNet 1.9.1.

    .venv/bin/python benchmarks/bench_sparse_dist.py [--steps 20] [--dense-steps 3] [--repeats 3]
        [--rounds 2] [--no-mxnet] [--no-dense]

2 workers + 1 server, an embedding of 10^6 x 64 float32 (256 MB). One step on each worker pushes
a row_sparse gradient of 2,000 distinct random rows and ``row_sparse_pull``s the same rows back,
then waits (the pattern of a CTR or word2vec step). Each run times ``--steps`` steps after a
warm-up; the table shows, per worker, the best and the median steps/s over ``--rounds`` x
``--repeats`` runs (the systems take turns round by round), and the bytes one worker sends plus
receives per step.

* mxref sparse: ``mpiexec -launcher fork -iface lo -n 3``, ``MXREF_NUM_SERVERS=1``; bytes are
  the communication thread's own counters (headers + data, exact).
* mxref dense: the same table as a dense key, pushed and pulled whole every step (what a store
  without row_sparse keys has to do), ``--dense-steps`` steps.
* MXNet 1.9.1: scheduler, server and two workers with ``DMLC_ROLE``, ``DMLC_PS_ROOT_URI=127.0.0.1``,
  ``DMLC_NODE_HOST=127.0.0.1``, ``DMLC_INTERFACE=lo``, ``DMLC_NUM_SERVER=1``,
  ``DMLC_NUM_WORKER=2``; the same calls on ``mx.nd.sparse`` arrays. Its bytes are the growth of
  the ``lo`` interface's transmit counter over the timed steps, halved per worker: an upper bound
  (TCP/IP headers, and whatever else used loopback meanwhile, are in it).

Every run checks one pulled row against the closed form first.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))

from bench_common import MPIEXEC, MXNET_PY, mpi_ranks, mxnet_ps  # noqa: E402 - the script's folder is on sys.path

ROWS, DIM, TOUCHED = 10 ** 6, 64, 2000


def _lo_tx() -> int:
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "lo":
                return int(rest.split()[8])
    return 0


def _loop(mx, kv, args, dense: bool, counted) -> dict:
    """Time push + pull steps (same code for mxref and MXNet); return steps/s and bytes/step."""
    import numpy as np
    n, rank = kv.num_workers, kv.rank
    rng = np.random.default_rng(rank)
    steps = args.dense_steps if dense else args.steps
    if dense:
        kv.init(0, mx.nd.zeros((ROWS, DIM)))
        grad, out = mx.nd.ones((ROWS, DIM)), mx.nd.zeros((ROWS, DIM))
    else:
        if mx.__name__ == "mxnet":
            # NOTE: MXNet 1.9.1's server needs every row in the initial value: it refuses an init
            # with no rows ("init with empty data is not supported"), and with only some rows
            # later pushes corrupt its memory (garbage pulls, then a crash). So it gets the whole
            # table once, before the timing; mxref's lazy store takes a key with no rows.
            kv.init(0, mx.nd.ones((ROWS, DIM)).tostype("row_sparse"))
        else:
            kv.init(0, mx.nd.sparse.zeros("row_sparse", (ROWS, DIM)))
        out = mx.nd.sparse.zeros("row_sparse", (ROWS, DIM))
        batches = []
        for _ in range(4):
            ids = np.sort(rng.choice(ROWS, TOUCHED, replace=False)).astype(np.int64)
            rows = np.ones((TOUCHED, DIM), np.float32)
            grad = mx.nd.sparse.row_sparse_array((rows, ids), shape=(ROWS, DIM))
            batches.append((grad, mx.nd.array(ids, dtype="int64")))

    def step(i):
        if dense:
            kv.push(0, grad)
            kv.pull(0, out=out)
        else:
            g, ids = batches[i % len(batches)]
            kv.push(0, g)
            kv.row_sparse_pull(0, out=out, row_ids=ids)
        out.wait_to_read()

    step(0)
    kv._barrier()
    step(1)          # each worker pushed once more: rows it touched hold that round's sum
    first = out.data.asnumpy()[0] if not dense else out.asnumpy()[0]
    assert 1 <= first[0] <= n, f"pulled {first[0]}, expected a count of pushers in [1, {n}]"
    rates, sizes = [], []
    for _ in range(args.repeats):
        kv._barrier()
        b0, t0 = counted(), time.perf_counter()
        for i in range(steps):
            step(i)
        rates.append(steps / (time.perf_counter() - t0))
        sizes.append((counted() - b0) / steps)
    return {"worker": rank, "steps": rates, "bytes": statistics.median(sizes)}


def role_mxref(args) -> None:
    sys.path.insert(0, ROOT)
    import mxref as mx
    kv = mx.kv.create("dist_sync")       # the server rank serves here and exits

    def counted():
        return kv._comm.bytes_sent + kv._comm.bytes_received
    print(json.dumps(_loop(mx, kv, args, args.role == "mxref-dense", counted)), flush=True)


def role_mxnet(args) -> None:
    import mxnet as mx
    kv = mx.kv.create("dist_sync")
    print(json.dumps(_loop(mx, kv, args, False, lambda: _lo_tx() / 2)), flush=True)


def _flags(args) -> list:
    return ["--steps", str(args.steps), "--dense-steps", str(args.dense_steps),
            "--repeats", str(args.repeats)]


def _mxref_run(args, role: str) -> list:
    return mpi_ranks(HERE, 3, ["--role", role, *_flags(args)], 900)


def _mxnet_run(args) -> list:
    return mxnet_ps(HERE, ["--role", "mxnet", *_flags(args)], 900)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--dense-steps", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-mxnet", action="store_true")
    ap.add_argument("--no-dense", action="store_true")
    ap.add_argument("--role", choices=["mxref", "mxref-dense", "mxnet"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role:
        (role_mxnet if args.role == "mxnet" else role_mxref)(args)
        return
    if not MPIEXEC:
        raise SystemExit("needs mpiexec and mpi4py (pip install mpi4py mpich)")
    runs = {"mxref dist_sync row_sparse": lambda: _mxref_run(args, "mxref"),
            "MXNet 1.9.1 dist_sync row_sparse": lambda: _mxnet_run(args),
            "mxref dist_sync dense table": lambda: _mxref_run(args, "mxref-dense")}
    if args.no_mxnet or not os.path.exists(MXNET_PY):
        runs.pop("MXNet 1.9.1 dist_sync row_sparse")
    if args.no_dense:
        runs.pop("mxref dist_sync dense table")
    rows = {label: [] for label in runs}
    for _ in range(args.rounds):
        for label, run in runs.items():
            rows[label] += run()
    print(f"dist_sync, 2 workers + 1 server on loopback, {ROWS:.0e} x {DIM} float32, {TOUCHED} rows "
          f"per step (push + row_sparse_pull); per worker: best / median steps/s of {args.rounds} "
          f"rounds x {args.repeats} runs, bytes sent + received per step\n")
    print(f"| {'':34s} | {'best steps/s':>12s} | {'median':>8s} | {'MB/step':>9s} | vs mxref sparse |")
    print(f"|{'-' * 36}|{'-' * 14}|{'-' * 10}|{'-' * 11}|-----------------|")
    ref = None
    for label, got in rows.items():
        best = min(max(s for r in got if r["worker"] == w for s in r["steps"]) for w in (0, 1))
        med = statistics.median(s for r in got for s in r["steps"])
        mb = statistics.median(r["bytes"] for r in got) / 1e6
        ref = ref or best
        print(f"| {label:34s} | {best:12.1f} | {med:8.1f} | {mb:9.3f} | {ref / best:14.2f}x |")
    print("\n(vs mxref sparse: how many times faster mxref's row_sparse step is than that row's)")


if __name__ == "__main__":
    main()
