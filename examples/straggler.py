"""The straggler experiment: BSP, SSP and ASP (and allreduce BSP) when one worker is slow.

Run the whole comparison (each mode is its own mpiexec job on loopback)::

    python examples/straggler.py --out straggler.csv

or one mode, as the comparison does::

    mpiexec -n 4 python examples/straggler.py --worker dist_ssp     # 3 workers + 1 server
    mpiexec -n 3 python examples/straggler.py --worker dist_sync_allreduce

Every worker fits the same softmax regression on its shard of a synthetic data set with SGD set on
the store (``set_optimizer``: on the servers for ``dist_*``, on each worker for the allreduce
store), pushing its gradient and pulling the weights once per step. The last worker sleeps
``--delay`` seconds per step. Worker 0, a fast one, records after each step the loss of the
weights it pulled on the whole data set, its step count and the wall time: the CSV has
``mode, step, seconds, loss`` and the summary prints where each mode stands when the fast worker
is done. ``docs/architecture/consistency.md`` discusses the numbers.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

MODES = ("dist_sync", "dist_ssp", "dist_async", "dist_sync_allreduce")
IN, CLASSES, ROWS = 20, 4, 4096


def data():
    rs = np.random.RandomState(0)
    X = rs.randn(ROWS, IN).astype(np.float32)
    y = (X @ rs.randn(IN, CLASSES) + 0.5 * rs.randn(ROWS, CLASSES)).argmax(1)
    return X, y


def loss_and_grad(w, X, y):
    """Mean softmax cross-entropy of ``X @ w`` and its gradient (summed over rows)."""
    z = X @ w
    z -= z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    loss = -np.log(p[np.arange(len(y)), y] + 1e-12).mean()
    p[np.arange(len(y)), y] -= 1
    return loss, X.T @ p


def worker(mode, steps, batch, delay, lr):
    import mxref as mx
    kv = mx.kv.create(mode)
    r, n = kv.rank, kv.num_workers
    X, y = data()
    Xs, ys = X[r::n], y[r::n]
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=lr, rescale_grad=1.0 / (batch * n)))
    kv.init(0, mx.nd.zeros((IN, CLASSES)))
    w = mx.nd.zeros((IN, CLASSES))
    kv.pull(0, out=w)
    rows = []
    t0 = time.perf_counter()
    for s in range(steps):
        lo = (s * batch) % (len(Xs) - batch)
        _, g = loss_and_grad(w.asnumpy(), Xs[lo:lo + batch], ys[lo:lo + batch])
        if r == n - 1 and delay:
            time.sleep(delay)                  # the straggler
        kv.push(0, mx.nd.array(g))
        kv.pull(0, out=w)
        if r == 0:
            rows.append((s + 1, time.perf_counter() - t0, loss_and_grad(w.asnumpy(), X, y)[0]))
    if r == 0:
        for s, t, loss in rows:
            print(f"ROW {mode},{s},{t:.4f},{loss:.5f}", flush=True)


def compare(args):
    env = dict(os.environ, FI_TCP_IFACE="lo", MXREF_NUM_SERVERS="1", MXREF_KV_STALENESS=str(args.tau))
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    mpiexec = mpiexec if os.path.exists(mpiexec) else "mpiexec"
    lines = ["mode,step,seconds,loss"]
    print(f"{args.workers} workers, worker {args.workers - 1} sleeps {args.delay}s per step, "
          f"{args.steps} steps each, SSP tau={args.tau}")
    print(f"{'mode':20s} {'fast worker done (s)':>20s} {'loss then':>10s} {'loss at step 10':>16s} "
          f"{f'loss at {args.at}s':>14s}")
    for mode in args.modes:
        procs = args.workers + (0 if "allreduce" in mode else 1)
        cmd = [mpiexec, "-launcher", "fork", "-iface", "lo", "-n", str(procs), sys.executable,
               os.path.abspath(__file__), "--worker", mode, "--steps", str(args.steps), "--batch",
               str(args.batch), "--delay", str(args.delay), "--lr", str(args.lr)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if out.returncode:
            raise SystemExit(f"{mode} failed:\n{out.stdout}{out.stderr}")
        rows = [line[4:].split(",") for line in out.stdout.splitlines() if line.startswith("ROW ")]
        lines += [",".join(row) for row in rows]
        last, tenth = rows[-1], rows[min(9, len(rows) - 1)]
        early = [row for row in rows if float(row[2]) <= args.at]
        at = f"{float(early[-1][3]):14.4f}" if early else f"{'-':>14s}"
        print(f"{mode:20s} {float(last[2]):20.2f} {float(last[3]):10.4f} {float(tenth[3]):16.4f} {at}")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"curves: {args.out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worker", choices=MODES, help="run as one rank of a job of this mode")
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--delay", type=float, default=0.05, help="the straggler's sleep per step (s)")
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--tau", type=int, default=2, help="staleness bound of dist_ssp")
    p.add_argument("--at", type=float, default=0.5, help="also report the loss at this wall time (s)")
    p.add_argument("--out", default=None, help="CSV of every mode's curve")
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.steps, args.batch, args.delay, args.lr)
    else:
        compare(args)


if __name__ == "__main__":
    main()
