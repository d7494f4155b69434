"""(b) The two-level KVStore: bytes that cross the host links with and without local aggregation.

    sudo python examples/cluster/two_level.py [--out out/cluster/two_level.png]

2 worker hosts x 2 devices each, one server host. *With* local aggregation, each host runs one
worker process holding both devices: it pushes a list of two values per key, which the store sums
in the process before one message leaves the host (MXNet's two-level aggregation, the paper's
section 3.3). *Without*, each host runs two worker processes of one device each, and both send.
The bytes per step are read from each worker host's veth counters, as the difference between a
run of 12 and a run of 2 steps (so start-up and initialisation cancel), and compared with
``P`` (the gradient bytes) per device or per host. (A veth counts what it is handed: TCP's
segmentation offload gives it segments of up to 64 KiB with one set of headers each, so the
counters see the payload plus well under 1%; the token bucket, which charges every wire frame's
headers, is what the 1514 / 1448 framing factor of scaling.py is for.)
"""
import argparse
from pathlib import Path

import common

CONFIGS = {"with local aggregation": ([1, 1, 1], 2), "without (a process per device)": ([1, 2, 2], 1)}


def per_step(state, ranks_per_host, devices, bandwidth, steps=(2, 12)):
    common.limit_all(state, bandwidth)
    placement = common.place(state, ranks_per_host)
    workers = sum(ranks_per_host[1:])
    counts, times = [], []
    for n in steps:
        before = common.link_bytes(state)
        res, _, _ = common.run_job(state, placement, workers, 1,
                                   ["--steps", n, "--devices", devices, "--phases", "comm", "--dim", 512])
        after = common.link_bytes(state)
        counts.append({h: {k: after[h][k] - before[h][k] for k in ("sent", "received")} for h in after})
        times.append(max(r["comm"] for r in res.values() if "comm" in r))
        payload = next(iter(res.values()))["bytes"]
    hosts = [h["name"] for h in state["hosts"][1:]]
    span = steps[1] - steps[0]
    sent = sum(counts[1][h]["sent"] - counts[0][h]["sent"] for h in hosts) / len(hosts) / span
    recv = sum(counts[1][h]["received"] - counts[0][h]["received"] for h in hosts) / len(hosts) / span
    return sent, recv, times[1], payload


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(common.ROOT / "out" / "cluster" / "two_level.png"))
    args = p.parse_args()
    rows, bars = [], []
    with common.hosts(3) as state:
        for label, (ranks, devices) in CONFIGS.items():
            sent, recv, _, payload = per_step(state, ranks, devices, "unlimited")
            _, _, t_slow, _ = per_step(state, ranks, devices, "100mbit", steps=(2, 4))
            want = payload * (2 // devices)
            rows.append([label, sent / 1e6, recv / 1e6, want / 1e6, sent / want, t_slow * 1e3])
            bars.append((label, sent / 1e6, recv / 1e6))
    print(f"P = {payload / 1e6:.3f} MB of gradients per device per step; 2 devices per host")
    print(common.table(["configuration", "MB sent/host/step", "MB received/host/step", "expected MB",
                        "sent/expected", "step at 100 Mbit/s (ms)"], rows))
    print(f"traffic ratio without/with: {rows[1][1] / rows[0][1]:.2f}x sent, "
          f"{rows[1][2] / rows[0][2]:.2f}x received")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = range(len(bars))
    ax.bar([x - 0.2 for x in xs], [b[1] for b in bars], 0.4, label="sent by a worker host")
    ax.bar([x + 0.2 for x in xs], [b[2] for b in bars], 0.4, label="received by a worker host")
    ax.set_xticks(list(xs), [b[0] for b in bars], fontsize=8)
    ax.set_ylabel("MB per step (veth counters)")
    ax.set_title("two-level KVStore: 2 hosts x 2 devices")
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
