"""Sync vs async vs bounded delay with a straggler: loss against wall time and against updates.

    mpiexec -launcher fork -iface lo -n 4 python examples/ps_straggler.py --delay 0.02 --out straggler
    python -m mxref.tools.launch -n 3 -s 1 -- python examples/ps_straggler.py

Every worker runs ``--steps`` steps of minibatch SGD on least squares (its own shard of the rows),
pushing its gradient and pulling the weight; the last worker sleeps ``--delay`` seconds before
each step. The same job is run on ``dist_sync``, ``dist_async`` and ``dist_ssp:TAU`` in turn.
Worker 0, a fast one, records after each pull the wall time, the number of gradients the servers
have applied so far (a counter riding in the weight's last element) and the full-data loss.

What to expect: ``dist_sync`` moves at the straggler's pace (every round waits for it);
``dist_async`` lets worker 0 run at its own pace, and the straggler's gradients arrive stale;
``dist_ssp`` lets the fast workers run at most ``TAU`` steps ahead, so it keeps the sync pace
with a constant straggler, but absorbs short hiccups. Worker 0 writes ``straggler.png`` (two
panels) when matplotlib is importable, else ``straggler.csv``, and prints a summary table.
"""
import argparse
import os
import time

import numpy as np

import mxref as mx


class CountingStep:
    """``w -= lr * g`` on all but the last element; the last one adds the pushes' counts, so the
    stored weight carries how many gradients were applied. Module-level: pickled to the servers."""

    def __init__(self, lr: float):
        self.lr = lr

    def __call__(self, key, grad, weight):
        w, g = weight.asnumpy(), grad.asnumpy()
        w[:-1] -= self.lr * g[:-1]
        w[-1] += g[-1]
        weight[:] = w


def make_data(n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = x @ rng.standard_normal(d).astype(np.float32) + 0.1 * rng.standard_normal(n).astype(np.float32)
    return x, y


def loss(x, y, w) -> float:
    return float(((x @ w - y) ** 2).mean() / 2)


def run(kv_type: str, x, y, args):
    """One training run; returns worker 0's trace ``[(seconds, gradients applied, loss)]``."""
    kv = mx.kv.create(kv_type)          # servers serve here (all three stores), then exit
    rank, n = kv.rank, kv.num_workers
    xs, ys = x[rank::n], y[rank::n]
    rng = np.random.default_rng(100 + rank)
    kv.init(0, mx.nd.zeros((x.shape[1] + 1,)))
    kv.set_updater(CountingStep(args.lr))
    weight = mx.nd.zeros((x.shape[1] + 1,))
    kv.barrier()                        # everyone starts the clock together
    t0 = time.perf_counter()
    trace = [(0.0, 0, loss(x, y, weight.asnumpy()[:-1]))]
    for _ in range(args.steps):
        if rank == n - 1:
            time.sleep(args.delay)      # the straggler
        w = weight.asnumpy()[:-1]
        i = rng.integers(0, len(ys), args.batch_size)
        g = xs[i].T @ (xs[i] @ w - ys[i]) / args.batch_size
        kv.push(0, mx.nd.array(np.append(g, np.float32(1))))
        kv.pull(0, out=weight)
        if rank == 0:
            seen = weight.asnumpy()
            trace.append((time.perf_counter() - t0, int(seen[-1]), loss(x, y, seen[:-1])))
    kv.barrier()                        # all pushes applied; the next store starts clean
    kv.pull(0, out=weight)
    final = weight.asnumpy()
    return rank, n, trace, loss(x, y, final[:-1]), int(final[-1])


def write_results(results: dict, out: str, force_csv: bool) -> str:
    try:
        if force_csv:
            raise ImportError
        import matplotlib  # noqa: PLC0415 - optional
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        path = out + ".csv"
        with open(path, "w") as f:
            f.write("kvstore,seconds,gradients_applied,loss\n")
            for name, (trace, _, _) in results.items():
                f.writelines(f"{name},{t:.6f},{u},{v:.6g}\n" for t, u, v in trace)
        return path
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for name, (trace, _, _) in results.items():
        t, u, v = zip(*trace)
        a.plot(t, v, label=name)
        b.plot(u, v, label=name)
    for ax, xlabel in ((a, "wall time seen by worker 0 (s)"), (b, "gradients applied on the servers")):
        ax.set_xlabel(xlabel)
        ax.set_ylabel("full-data loss")
        ax.set_yscale("log")
        ax.legend()
    fig.suptitle("one straggler: sync vs async vs bounded delay")
    fig.tight_layout()
    path = out + ".png"
    fig.savefig(path, dpi=90)
    return path


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--delay", type=float, default=0.02, help="the straggler's sleep per step (s)")
    p.add_argument("--tau", type=int, default=2, help="staleness bound of dist_ssp")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--out", default="straggler", help="output path without extension")
    p.add_argument("--csv", action="store_true", help="write the CSV even if matplotlib is there")
    args = p.parse_args(argv)
    x, y = make_data(4000, 50)
    results = {}
    for kv_type in ("dist_sync", "dist_async", f"dist_ssp:{args.tau}"):
        rank, n, trace, final_loss, applied = run(kv_type, x, y, args)
        results[kv_type] = (trace, final_loss, applied)
        assert applied == n * args.steps, f"{kv_type}: {applied} gradients applied, expected {n * args.steps}"
    if rank != 0:
        return results
    print(f"{n} workers, worker {n - 1} sleeps {args.delay}s per step, {args.steps} steps each\n")
    print(f"{'kvstore':14s} {'worker 0 done (s)':>18s} {'applied then':>13s} {'its loss':>10s} "
          f"{'final loss':>11s}")
    for name, (trace, final_loss, _) in results.items():
        t, u, v = trace[-1]
        print(f"{name:14s} {t:18.3f} {u:13d} {v:10.4g} {final_loss:11.4g}")
    print(f"\nwrote {write_results(results, os.path.abspath(args.out), args.csv)}")
    return results


if __name__ == "__main__":
    main()
