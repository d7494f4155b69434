"""(d) Parameter server vs ring vs tree allreduce as the link bandwidth changes, with the crossover.

    sudo python examples/cluster/allreduce_vs_ps.py [--repeats 3] [--out out/cluster/allreduce_vs_ps.png]

4 worker hosts sum 1 MiB of gradients (4 keys of 256 x 256 float32) per step, every link at the
same limit. Parameter server: ``dist_sync`` with one server on a fifth host (push + pull, SGD on
the server). Ring and tree: ``mxref.collective.allreduce`` over MPI (``ring_mincount`` forcing
one algorithm for every size), no server. All three use MPI over the same links. What each link
must carry per step, per direction, in units of P = 1 MiB: the server's link W = 4 P; the ring's
links 2(W-1)/W = 1.5 P; the binary tree's inner nodes 2 P (two children up, then two down).
"""
import argparse
import statistics
from pathlib import Path

import common

RATES = [("100mbit", 100e6), ("300mbit", 300e6), ("1gbit", 1e9), ("3gbit", 3e9), ("unlimited", None)]
ALGOS = ["parameter server", "ring", "tree"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--out", default=str(common.ROOT / "out" / "cluster" / "allreduce_vs_ps.png"))
    args = p.parse_args()
    times = {}
    with common.hosts(5) as state:
        ps_place = common.place(state, [1, 1, 1, 1, 1])
        ar_place = common.place(state, [0, 1, 1, 1, 1])
        for name, _rate in RATES:
            common.limit_all(state, name)
            for algo in ALGOS:
                reps = []
                for _ in range(args.repeats):
                    if algo == "parameter server":
                        job = ["--steps", args.steps, "--phases", "comm"]
                        res, _, _ = common.run_job(state, ps_place, 4, 1, job)
                    else:
                        job = ["--steps", args.steps + 1, "--kv-store", f"allreduce:{algo}"]
                        res, _, _ = common.run_job(state, ar_place, 4, 0, job)
                    reps.append(max(r["comm"] for r in res.values()))
                times[name, algo] = statistics.median(reps)
    rows = []
    for name, rate in RATES:
        row = [name] + [times[name, a] * 1e3 for a in ALGOS]
        best = min(ALGOS, key=lambda a: times[name, a])
        row.append(best)
        if rate:
            mib = 2**20 * 1514 / 1448 / (rate / 8) * 1e3     # ms to move 1 MiB of payload
            row += [4 * mib, 1.5 * mib, 2 * mib]
        else:
            row += ["-", "-", "-"]
        rows.append(row)
    print(f"4 workers, 1 MiB per step; medians of {args.repeats} runs of {args.steps} steps (slowest worker)")
    print(common.table(["link", "PS ms", "ring ms", "tree ms", "fastest", "PS link-bound ms",
                        "ring link-bound ms", "tree link-bound ms"], rows))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [r / 1e6 if r else 20000 for _, r in RATES]
    for algo in ALGOS:
        ax.plot(xs, [times[n, algo] * 1e3 for n, _ in RATES], "o-", label=algo)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("link bandwidth, Mbit/s (rightmost: unlimited)")
    ax.set_ylabel("ms per 1 MiB allreduce step")
    ax.legend()
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
