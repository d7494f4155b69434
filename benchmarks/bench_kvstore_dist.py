"""``dist_sync`` push+pull bandwidth on loopback, mxref vs MXNet 1.9.1 ps-lite vs raw mpi4py, and scaling.

    .venv/bin/python benchmarks/bench_kvstore_dist.py [--iters 5] [--repeats 3] [--rounds 2] [--no-mxnet]
        [--no-bandwidth] [--no-scaling] [--max-workers 4] [--scale-iters 10]

Bandwidth: 2 workers + 1 server, 10 keys of 4 MiB float32 (2^20 elements). One iteration pushes
every key (``priority=-key``) and pulls it back, then waits; MB/s per worker counts the bytes
each worker sends and receives (10 x 4 MiB x 2 per iteration, MB = 10^6 bytes). Each system runs
``--repeats`` times ``--iters`` iterations per round, the systems taking turns for ``--rounds``
rounds; the table shows the best run (the machine is shared: the best run is the stable estimate
of what the code can do) and the median. Every run checks the pulled sums.

* mxref: ``mpiexec -launcher fork -iface lo -n 3`` with ``MXREF_NUM_SERVERS=1``.
* MXNet 1.9.1: scheduler, server and two workers started here with ``DMLC_ROLE``,
  ``DMLC_PS_ROOT_URI=127.0.0.1``, ``DMLC_PS_ROOT_PORT``, ``DMLC_NUM_SERVER=1``,
  ``DMLC_NUM_WORKER=2``, ``DMLC_NODE_HOST=127.0.0.1``, ``DMLC_INTERFACE=lo``.
* raw mpi4py (the limit): the same bytes, ``Isend``/``Irecv`` of all ten buffers at once, the
  "server" rank receiving everything and sending it back.

Scaling: a synthetic data-parallel job (numpy compute, one BLAS thread per process: four
512x512 tanh layers, batch 128, their 4 MiB of gradients pushed to a server-side SGD and the
weights pulled back) on 1..4 workers + 1 server. Each worker also times the compute alone and
the push+pull alone, the two costs of the cluster model in ``docs/benchmarks.md``.
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

NKEYS, NELEM = 10, 1 << 20
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _bw_loop(mx, kv, iters: int, repeats: int) -> dict:
    """push+pull of every key, ``repeats`` x ``iters`` times; MB/s per run (same code for both)."""
    import numpy as np
    n = kv.num_workers
    keys = list(range(NKEYS))
    kv.init(keys, [mx.nd.zeros((NELEM,)) for _ in keys])
    vals = [mx.nd.ones((NELEM,)) * (k + 1) for k in keys]
    outs = [mx.nd.zeros((NELEM,)) for _ in keys]

    def one():
        for k in keys:
            kv.push(k, vals[k], priority=-k)
            kv.pull(k, out=outs[k], priority=-k)
        mx.nd.waitall()

    one()
    for k in keys:      # no updater: the round's sum replaces the value
        assert np.all(outs[k].asnumpy() == n * (k + 1)), f"key {k}: wrong sum"
    mbps = []
    for _ in range(repeats):
        kv._barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            one()
        mbps.append(iters * NKEYS * NELEM * 4 * 2 / (time.perf_counter() - t0) / 1e6)
    return {"worker": kv.rank, "mbps": mbps}


def role_mxref(args) -> None:
    sys.path.insert(0, ROOT)
    import mxref as mx
    kv = mx.kv.create("dist_sync")      # the server rank serves here and exits
    print(json.dumps(_bw_loop(mx, kv, args.iters, args.repeats)), flush=True)


def role_mxnet(args) -> None:
    import mxnet as mx
    kv = mx.kv.create("dist_sync")
    print(json.dumps(_bw_loop(mx, kv, args.iters, args.repeats)), flush=True)


def role_mpi(args) -> None:
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, nworkers = comm.Get_rank(), comm.Get_size() - 1
    if rank == 0:
        bufs = [[np.empty(NELEM, np.float32) for _ in range(NKEYS)] for _ in range(nworkers)]
    else:
        vals = [np.full(NELEM, k + 1, np.float32) for k in range(NKEYS)]
        outs = [np.empty(NELEM, np.float32) for _ in range(NKEYS)]

    pairs = [(w, k) for w in range(nworkers) for k in range(NKEYS)]

    def one():
        if rank == 0:
            MPI.Request.Waitall([comm.Irecv(bufs[w][k], w + 1, k) for w, k in pairs])
            MPI.Request.Waitall([comm.Isend(bufs[w][k], w + 1, k) for w, k in pairs])
        else:
            MPI.Request.Waitall([comm.Isend(vals[k], 0, k) for k in range(NKEYS)]
                                + [comm.Irecv(outs[k], 0, k) for k in range(NKEYS)])

    one()
    mbps = []
    for _ in range(args.repeats):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            one()
        mbps.append(args.iters * NKEYS * NELEM * 4 * 2 / (time.perf_counter() - t0) / 1e6)
    if rank:
        assert np.all(outs[3] == 4)
        print(json.dumps({"worker": rank - 1, "mbps": mbps}), flush=True)


def role_scale(args) -> None:
    """The synthetic data-parallel job (one process of it)."""
    import numpy as np
    sys.path.insert(0, ROOT)
    import mxref as mx
    kv = mx.kv.create("dist_sync")
    d, batch, layers = 512, 128, 4
    rng = np.random.default_rng(kv.rank)
    kv.init(list(range(layers)), [mx.nd.array(rng.standard_normal((d, d)).astype(np.float32) / d ** 0.5)
                                  for _ in range(layers)])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=1e-3))
    weights = [mx.nd.zeros((d, d)) for _ in range(layers)]
    x = rng.standard_normal((batch, d)).astype(np.float32)

    def compute():
        h, grads = x, []
        for w in weights:
            h = np.tanh(h @ w.asnumpy())
            grads.append(mx.nd.array(h.T @ h / batch))
        return grads

    def comm(grads):
        for k in range(layers):
            kv.push(k, grads[k], priority=-k)
            kv.pull(k, out=weights[k], priority=-k)
        mx.nd.waitall()

    def timed(fn, n):
        kv._barrier()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n

    grads = compute()
    comm(grads)
    t_compute = timed(compute, args.scale_iters)
    t_comm = timed(lambda: comm(grads), args.scale_iters)
    t_step = timed(lambda: comm(compute()), args.scale_iters)
    print(json.dumps({"worker": kv.rank, "compute": t_compute, "comm": t_comm, "step": t_step,
                      "batch": batch, "bytes": layers * d * d * 4}), flush=True)


def _mpirun(role: str, nprocs: int, args, env=None) -> list:
    return mpi_ranks(HERE, nprocs, ["--role", role, "--iters", str(args.iters), "--repeats",
                                    str(args.repeats), "--scale-iters", str(args.scale_iters)], 600, env)


def _mxnet_run(args) -> list:
    """Scheduler, one server and two workers of MXNet 1.9.1, all on 127.0.0.1."""
    return mxnet_ps(HERE, ["--role", "mxnet", "--iters", str(args.iters), "--repeats", str(args.repeats)],
                    600)


def _bw_row(label: str, rows: list, ref=None) -> float:
    best = min(max(m for r in rows if r["worker"] == w for m in r["mbps"]) for w in (0, 1))  # slower worker
    med = statistics.median(m for r in rows for m in r["mbps"])
    vs = f"{best / ref:7.2f}x" if ref else " " * 8
    print(f"| {label:28s} | {best:10.0f} | {med:10.0f} | {vs} |")
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scale-iters", type=int, default=10)
    ap.add_argument("--max-workers", type=int, default=4)
    ap.add_argument("--no-mxnet", action="store_true")
    ap.add_argument("--no-bandwidth", action="store_true")
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--role", choices=["mxref", "mxnet", "mpi", "scale"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role:
        {"mxref": role_mxref, "mxnet": role_mxnet, "mpi": role_mpi, "scale": role_scale}[args.role](args)
        return
    if not MPIEXEC:
        raise SystemExit("needs mpiexec and mpi4py (pip install mpi4py mpich)")
    if not args.no_bandwidth:
        bandwidth(args)
    if not args.no_scaling:
        scaling(args)


def bandwidth(args) -> None:
    print(f"dist_sync push+pull, 2 workers + 1 server on loopback, {NKEYS} keys x 4 MiB, MB/s per "
          f"worker (sent + received): best / median of {args.rounds} rounds x {args.repeats} runs x "
          f"{args.iters} iterations, the systems alternating round by round\n")
    runs = {"MXNet 1.9.1 ps-lite": lambda: _mxnet_run(args),
            "mxref dist_sync (MPI)": lambda: _mpirun("mxref", 3, args),
            "raw mpi4py Isend/Irecv": lambda: _mpirun("mpi", 3, args)}
    if args.no_mxnet or not os.path.exists(MXNET_PY):
        runs.pop("MXNet 1.9.1 ps-lite")
    rows = {label: [] for label in runs}
    for _ in range(args.rounds):     # alternate, so that a noisy neighbour hurts every system alike
        for label, run in runs.items():
            rows[label] += run()
    print(f"| {'':28s} | {'best MB/s':>10s} | {'median':>10s} | vs MXNet |")
    print(f"|{'-' * 30}|{'-' * 12}|{'-' * 12}|----------|")
    ref = None
    for label, got in rows.items():
        best = _bw_row(label, got, ref)
        ref = ref or (best if label.startswith("MXNet") else None)


def scaling(args) -> None:
    print(f"\nscaling: synthetic data-parallel job, W workers + 1 server, {os.cpu_count()} cores, "
          f"ms per step (mean of the workers)\n")
    print("| W | compute alone | push+pull alone | step | samples/s (all workers) | speedup |")
    print("|---|---|---|---|---|---|")
    base = None
    for w in range(1, args.max_workers + 1):
        rows = _mpirun("scale", w + 1, args, env=ONE_THREAD)
        c, m, s = (statistics.mean(r[f] for r in rows) * 1e3 for f in ("compute", "comm", "step"))
        rate = sum(r["batch"] / r["step"] for r in rows)
        base = base or rate
        print(f"| {w} | {c:.1f} | {m:.1f} | {s:.1f} | {rate:.0f} | {rate / base:.2f}x |")


if __name__ == "__main__":
    main()
