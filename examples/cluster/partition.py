"""(e) A partition: one worker host's link taken down for 5 s mid-run, under ``dist_sync``,
``dist_async`` and the robust allreduce, with a timeout longer and one shorter than the outage.

    sudo python examples/cluster/partition.py [--outage 5] [--out out/cluster/partition.png]

One server on host 0 (none for the allreduce), worker 0 on host 1, worker 1 on host 2; each
worker records when each step ends. 3 s after every worker has logged its first step, host 2's
link goes down; 5 s later it comes back. For each run the table gives the exit status, the
longest stall of each worker (the largest gap between two step ends) and the first error line
of the job's output.
"""
import argparse
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import common

RUNS = [  # (store, {variable: timeout}); the timeouts bound every blocking step (docs/env_vars.md)
    ("dist_sync", {"MXREF_KV_TIMEOUT": "30"}),
    ("dist_sync", {"MXREF_KV_TIMEOUT": "3"}),
    ("dist_async", {"MXREF_KV_TIMEOUT": "30"}),
    ("dist_async", {"MXREF_KV_TIMEOUT": "3"}),
    ("allreduce:ring", {"MXREF_COLLECTIVE_TIMEOUT": "30"}),
    ("allreduce:ring", {"MXREF_COLLECTIVE_TIMEOUT": "3"}),
]


def one_run(state, store, env, outage, lead=3.0):
    robust = store.startswith("allreduce")
    placement = common.place(state, [0, 1, 1] if robust else [1, 1, 1])
    out = Path(tempfile.mkdtemp(prefix="mxref-part-", dir=state["folder"]))
    steps = 200
    cmd = [common.PY, "-m", "mxref.tools.launch", "-n", "2", "--hostfile", placement]
    cmd += ["--engine", "robust", "--max-restarts", "0"] if robust else ["-s", "1"]
    cmd += ["--", common.PY, str(Path(__file__).parent / "job.py"), "--kv-store", store,
            "--steps", str(steps), "--pace", "0.05", "--phases", "step", "--steps-log", "--dim", "128"]
    environ = dict(os.environ, PYTHONPATH=str(common.ROOT), MXREF_CLUSTER_DIR=str(state["folder"]),
                   RESULT_DIR=str(out), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **env)
    start = time.time()
    proc = subprocess.Popen(cmd, env=environ, cwd=common.ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.time() + 120
    while len(list(out.glob("running*"))) < 2:      # every worker past its first step
        if proc.poll() is not None or time.time() > deadline:
            raise SystemExit(f"{store}: the job ended or hung before its first step:\n"
                             f"{proc.communicate()[0]}")
        time.sleep(0.05)
    time.sleep(lead)
    victim = state["hosts"][2]["name"]
    common.cluster.set_link(victim, False, state["folder"])
    down_at = time.time()
    time.sleep(outage)
    common.cluster.set_link(victim, True, state["folder"])
    up_at = time.time()
    try:
        output, _ = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)           # the launcher and its mpiexec
        output = proc.communicate()[0] + "\n(killed after 180 s)"
    end = time.time()
    results = {int(p.stem[4:]): json.loads(p.read_text()) for p in out.glob("rank*.json")}
    stalls = {}
    for rank, r in sorted(results.items()):
        ends = r.get("ends", [])
        gaps = [b - a for a, b in zip(ends, ends[1:])]
        stalls[r.get("worker", rank)] = max(gaps) if gaps else None
    errors = [line.strip() for line in output.splitlines()
              if "Error" in line or "error" in line or "did not" in line or "failed" in line]
    return {"store": store, "timeout": next(iter(env.items())), "rc": proc.returncode,
            "stalls": stalls, "error": errors[0] if errors else "", "errors": errors,
            "down_at": down_at - start, "up_at": up_at - start, "end": end - start,
            "ends": {k: [t - start for t in r.get("ends", [])] for k, r in results.items()}}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--outage", type=float, default=5.0)
    p.add_argument("--out", default=str(common.ROOT / "out" / "cluster" / "partition.png"))
    args = p.parse_args()
    runs = []
    with common.hosts(3) as state:
        for store, env in RUNS:
            runs.append(one_run(state, store, env, args.outage))
            r = runs[-1]
            print(f"{r['store']} {r['timeout'][0]}={r['timeout'][1]}: rc={r['rc']} stalls={r['stalls']} "
                  f"end={r['end']:.1f}s\n   " + "\n   ".join(r["errors"][:2] + [
                      e for e in r["errors"] if e.startswith("[launch]")]), flush=True)
    rows = []
    for r in runs:
        stall = ", ".join(f"w{k}: {v:.2f}" if v is not None else f"w{k}: -" for k, v in r["stalls"].items())
        rows.append([r["store"], f"{r['timeout'][0]}={r['timeout'][1]}", r["rc"], stall or "no step log",
                     f"{r['end']:.1f}", r["error"][:110]])
    print(common.table(["store", "timeout", "exit", "longest stall (s)", "job s", "first error line"], rows))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(runs), 1, figsize=(7, 1.3 * len(runs)), sharex=True)
    for ax, r in zip(axes, runs):
        for k, ends in sorted(r["ends"].items()):
            ax.plot(ends, range(len(ends)), label=f"rank {k}")
        ax.axvspan(r["down_at"], r["up_at"], color="red", alpha=0.15)
        ax.set_title(f"{r['store']} {r['timeout'][0]}={r['timeout'][1]} (exit {r['rc']})", fontsize=8)
        ax.set_ylabel("steps", fontsize=7)
    axes[-1].set_xlabel("seconds since launch (red: host 2's link down)")
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
