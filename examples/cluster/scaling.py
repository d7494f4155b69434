"""(a) ``dist_sync`` data-parallel scaling over 1-4 worker hosts at 100 Mbit/s, 1 Gbit/s and
unlimited links, against the analytical model of docs/benchmarks.md.

    sudo python examples/cluster/scaling.py [--steps 5] [--repeats 3] [--out out/cluster/scaling.png]

One server on host 0, worker i on host i (each on its own link). The model (docs/benchmarks.md,
"Larger clusters, on paper") is ``t_step = t_c + max(t_m, W * 2P / B)``: compute, then either the
fixed cost of one push+pull or the server's link moving every worker's gradient in and every
worker's weights out (push and pull do not overlap under ``dist_sync``), whichever is longer.
``t_c`` and ``t_m`` are measured with one worker on unlimited links; ``B`` is the link's rate
(tbf counts frames, so ``2P`` is counted with TCP/IP/Ethernet framing, 1514 / 1448 of the payload).
A second column refines it: each direction of a link has its own limit, and with K keys pushed
and pulled in turn the pulls of early keys overlap the pushes of later ones, so the link is busy
for about ``W * P / B * (1 + 1/K)`` rather than ``W * 2P / B``.
"""
import argparse
import statistics
from pathlib import Path

import common

FRAMING = 1514 / 1448
LAYERS = 4
RATES = [("100mbit", 100e6), ("1gbit", 1e9), ("unlimited", None)]


def model(t_c, t_m, w, payload, rate, overlap_keys=None):
    """The docs' model; with ``overlap_keys=K`` the two directions overlap (see the docstring)."""
    if rate is None:
        return t_c + t_m
    per_direction = w * payload * FRAMING / (rate / 8)
    wire = per_direction * (1 + 1 / overlap_keys) if overlap_keys else 2 * per_direction
    return t_c + max(t_m, wire)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--max-workers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=str(common.ROOT / "out" / "cluster" / "scaling.png"))
    args = p.parse_args()
    job = ["--steps", args.steps, "--dim", 256, "--layers", LAYERS, "--batch", 64]
    rows, curves = [], {}
    with common.hosts(args.max_workers + 1) as state:
        measured = {}
        for name, _rate in reversed(RATES):          # unlimited first: it gives t_c and t_m
            common.limit_all(state, name)
            for w in range(1, args.max_workers + 1):
                placement = common.place(state, [1] + [1] * w + [0] * (args.max_workers - w))
                reps = []
                for _ in range(args.repeats):
                    before = common.link_bytes(state)[state["hosts"][0]["name"]]
                    res, _, _ = common.run_job(state, placement, w, 1, job)
                    after = common.link_bytes(state)[state["hosts"][0]["name"]]
                    workers = [r for r in res.values() if "step" in r]
                    assert len(workers) == w, res
                    rep = {k: max(r[k] for r in workers) for k in ("compute", "comm", "step")}
                    rep["server_mb"] = (after["received"] - before["received"]
                                        + after["sent"] - before["sent"]) / 1e6
                    reps.append(rep)
                    payload = workers[0]["bytes"]
                # the slowest worker of each run, the median over the runs
                measured[name, w] = {k: statistics.median(r[k] for r in reps) for k in reps[0]}
        t_c, t_m = measured["unlimited", 1]["compute"], measured["unlimited", 1]["comm"]
        for name, rate in RATES:
            base = measured[name, 1]["step"]
            xs, ys, ms = [], [], []
            for w in range(1, args.max_workers + 1):
                m = measured[name, w]
                pred = model(t_c, t_m, w, payload, rate)
                refined = model(t_c, t_m, w, payload, rate, overlap_keys=LAYERS)
                rows.append([name, w, m["compute"] * 1e3, m["comm"] * 1e3, m["step"] * 1e3, pred * 1e3,
                             refined * 1e3, m["step"] / pred, m["step"] / refined, w * base / m["step"],
                             m["server_mb"]])
                xs.append(w)
                ys.append(m["step"] * 1e3)
                ms.append(pred * 1e3)
            curves[name] = (xs, ys, ms)
    print(f"payload P = {payload / 2**20:.2f} MiB per worker per step; t_c = {t_c * 1e3:.1f} ms, "
          f"t_m = {t_m * 1e3:.1f} ms (1 worker, unlimited); medians of {args.repeats} runs, each the "
          "slowest worker's mean over its steps")
    print(common.table(["link", "W", "compute ms", "push+pull ms", "step ms", "model ms", "overlap model ms",
                        "step/model", "step/overlap", "speedup", "server link MB"], rows))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, (xs, ys, ms) in curves.items():
        line, = ax.plot(xs, ys, "o-", label=f"{name} measured")
        ax.plot(xs, ms, "--", color=line.get_color(), label=f"{name} model (no overlap)")
    ax.set_xlabel("worker hosts (W), one server host")
    ax.set_ylabel("time per step (ms)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title("dist_sync step time vs link bandwidth")
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
