"""``linalg.gemm2`` and ``linalg.potrf``: mxref vs MXNet 1.9.1, side by side.

Four float32 workloads: gemm2 on a batch of 32 matrices 128 x 128 and on one 1024 x 1024 pair,
potrf on a batch of 128 SPD matrices 64 x 64 and on one 512 x 512. Each system runs in its own
subprocess on the same data (written once to an .npz) at ``--threads`` operator and BLAS threads
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``) and prints the median
milliseconds of ``--repeats`` calls (each waited for) after a warm-up; rounds alternate the systems
(the machine's load drifts) and the table shows the median over rounds, with the ratio MXNet time /
mxref time (above 1: mxref is faster), of the medians and paired (the median of each round's ratio).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_linalg.py --repeats 20 --rounds 3
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from bench_common import median_ms

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MXNET_PYTHONS = ("/work/venvs/mxnet191/bin/python", "/work/ref/mxvenv/bin/python")
WORKLOADS = [("gemm2 32 x 128x128", "gemm2", "ga", "gb"), ("gemm2 1024x1024", "gemm2", "Ga", "Gb"),
             ("potrf 128 x 64x64", "potrf", "pa", None), ("potrf 512x512", "potrf", "Pa", None)]


def make_data(path: str) -> None:
    rng = np.random.default_rng(0)

    def spd(*shape):
        x = rng.standard_normal(shape, dtype=np.float32)
        return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1], dtype=np.float32)
    np.savez(path, ga=rng.standard_normal((32, 128, 128), dtype=np.float32),
             gb=rng.standard_normal((32, 128, 128), dtype=np.float32),
             Ga=rng.standard_normal((1024, 1024), dtype=np.float32),
             Gb=rng.standard_normal((1024, 1024), dtype=np.float32), pa=spd(128, 64, 64), Pa=spd(512, 512))


def worker(system: str, path: str, repeats: int) -> None:
    if system == "mxnet":
        import mxnet as mx
    else:
        sys.path.insert(0, ROOT)
        import mxref as mx
    z = np.load(path)
    arr = {k: mx.nd.array(z[k], dtype=np.float32) for k in z.files}
    res = {}
    for label, op, a, b in WORKLOADS:
        fn = getattr(mx.nd.linalg, op)
        args = [arr[a]] if b is None else [arr[a], arr[b]]
        res[label] = median_ms(lambda fn=fn, args=args: fn(*args).wait_to_read(), repeats, warmup=3)
    print(json.dumps(res))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each system, interleaved")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mxnet-python", default=next((p for p in MXNET_PYTHONS if os.path.exists(p)), None))
    ap.add_argument("--worker", default=None)
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.data, args.repeats)
        return
    systems = [("mxref", sys.executable)]
    if args.mxnet_python:
        systems.append(("mxnet", args.mxnet_python))
    threads = str(args.threads)     # operator threads and BLAS threads alike, as bench_common does
    env = dict(os.environ, OMP_NUM_THREADS=threads, MXNET_OMP_MAX_THREADS=threads,
               OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "linalg.npz")
        make_data(path)
        for _ in range(args.rounds):
            for name, python in systems:
                cmd = [python, os.path.abspath(__file__), "--worker", name, "--data", path,
                       "--repeats", str(args.repeats)]
                out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
                if out.returncode != 0:
                    raise SystemExit(f"{name} failed:\n{out.stderr[-2000:]}")
                runs.setdefault(name, []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {name: {w[0]: float(np.median([r[w[0]] for r in rs])) for w in WORKLOADS}
           for name, rs in runs.items()}
    print(f"median ms of {args.repeats} calls, median of {args.rounds} interleaved rounds, "
          f"{args.threads} threads, float32")
    print(f"{'workload':<22}" + "".join(f"{n:>10}" for n in med)
          + ("   MXNet/mxref   paired" if "mxnet" in med else ""))
    for label, *_ in WORKLOADS:
        row = f"{label:<22}" + "".join(f"{med[n][label]:>10.2f}" for n in med)
        if "mxnet" in med:
            # paired: the ratio within each round (the two ran back to back), then the median
            paired = np.median([m[label] / r[label] for m, r in zip(runs["mxnet"], runs["mxref"])])
            row += f"   {med['mxnet'][label] / med['mxref'][label]:>10.2f}x {paired:>7.2f}x"
        print(row)


if __name__ == "__main__":
    main()
