"""(c) 2-bit gradient compression under 100 Mbit/s links: time per epoch against dense pushes.

    sudo python examples/cluster/compression.py [--repeats 3] [--out out/cluster/compression.png]

One server host, 2 worker hosts, every link 100 Mbit/s; an "epoch" is 20 steps of the synthetic
job (4 keys of 256 x 256 float32, 1 MiB of gradients per worker per step). 2-bit compression
(``kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})``) sends 2 bits per element on
a push (16x fewer bytes, the residual kept on the worker); pulls stay dense, as in MXNet. Bytes
per step are the worker hosts' veth counters, as the difference of a 20-step and a 2-step run.
Row-sparse pushes are not measured here: this job's dense layers touch every row, so a
row_sparse push of them would carry the whole table; that comparison needs an embedding
workload of its own (``benchmarks/bench_sparse_dist.py`` measures one on loopback).
"""
import argparse
import statistics
from pathlib import Path

import common

EPOCH = 20


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=str(common.ROOT / "out" / "cluster" / "compression.png"))
    args = p.parse_args()
    rows, bars = [], []
    with common.hosts(3, "100mbit") as state:
        placement = common.place(state, [1, 1, 1])
        workers = [h["name"] for h in state["hosts"][1:]]
        for label, comp in (("dense", "none"), ("2-bit", "2bit")):
            epochs, sent, recv = [], [], []
            for _ in range(args.repeats):
                counts = []
                for steps in (2, EPOCH):
                    before = common.link_bytes(state)
                    job = ["--steps", steps, "--compression", comp, "--phases", "step"]
                    res, _, _ = common.run_job(state, placement, 2, 1, job)
                    after = common.link_bytes(state)
                    counts.append({h: {k: after[h][k] - before[h][k] for k in ("sent", "received")}
                                   for h in workers})
                epochs.append(max(r["step"] for r in res.values() if "step" in r) * EPOCH)
                span = EPOCH - 2
                for total, kind in ((sent, "sent"), (recv, "received")):
                    total.append(sum(counts[1][h][kind] - counts[0][h][kind] for h in workers) / 2 / span)
            payload = next(iter(res.values()))["bytes"]
            rows.append([label, statistics.median(epochs), statistics.median(sent) / 1e6,
                         statistics.median(recv) / 1e6])
            bars.append((label, statistics.median(epochs)))
    dense = rows[0][1]
    for r in rows:
        r.append(dense / r[1])
    print(f"P = {payload / 1e6:.3f} MB of gradients per worker per step, 2 workers, links 100 Mbit/s, "
          f"epoch = {EPOCH} steps, medians of {args.repeats} runs")
    print(common.table(["pushes", "s per epoch", "MB sent/worker host/step", "MB received/worker host/step",
                        "speedup vs dense"], rows))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.bar([b[0] for b in bars], [b[1] for b in bars])
    ax.set_ylabel("seconds per epoch (20 steps)")
    ax.set_title("dist_sync at 100 Mbit/s: dense vs 2-bit pushes")
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
