"""Imperative dispatch cost: 20,000 x ``c = a + b`` and ``a += 1`` on 10-element float32 arrays.

Prints microseconds per operation (median of the repeats, each ending with a full wait) for mxref
(threaded engine with the Cython extensions, threaded pure Python, naive engine), numpy, and
MXNet 1.9.1 and PyTorch when their virtual environments exist; ratios are against MXNet.

    .venv/bin/python benchmarks/bench_dispatch.py [--n 20000] [--repeats 5]

Every framework runs in its own subprocess, so one's threads never slow another.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MXNET_PY = "/work/venvs/mxnet191/bin/python"
TORCH_PY = "/work/venvs/torch213/bin/python"


# ---------------------------------------------------------------------------------------------
# Workers: each runs inside the framework's own interpreter and prints one JSON line.
# ---------------------------------------------------------------------------------------------

def _time_loops(make, add_loop, iadd_loop, sync, n: int, repeats: int) -> dict:
    result = {}
    for name, loop in (("add", add_loop), ("iadd", iadd_loop)):
        samples = []
        for _ in range(repeats):
            a, b = make()
            sync()
            t0 = time.perf_counter()
            loop(a, b, n)
            sync()
            samples.append((time.perf_counter() - t0) / n * 1e6)
        result[name] = statistics.median(samples)
    return result


def _add_loop(a, b, n):
    for _ in range(n):
        c = a + b  # noqa: F841 - the assignment (and freeing the previous c) is part of the cost


def _iadd_loop(a, b, n):
    for _ in range(n):
        a += 1


def worker(kind: str, n: int, repeats: int) -> dict:
    if kind == "mxref":
        sys.path.insert(0, ROOT)
        import mxref as mx
        from mxref._ext.loader import STATUS
        res = _time_loops(lambda: (mx.nd.ones((10,)), mx.nd.ones((10,))), _add_loop, _iadd_loop,
                          mx.nd.waitall, n, repeats)
        res["engine"] = mx.engine.get().name
        res["ext"] = {k: v[0] for k, v in STATUS.items()}
        return res
    if kind == "mxnet":
        import mxnet as mx
        return _time_loops(lambda: (mx.nd.ones((10,)), mx.nd.ones((10,))), _add_loop, _iadd_loop,
                           mx.nd.waitall, n, repeats)
    if kind == "torch":
        import torch
        torch.set_num_threads(1)
        return _time_loops(lambda: (torch.ones(10), torch.ones(10)), _add_loop, _iadd_loop,
                           lambda: None, n, repeats)
    if kind == "numpy":
        import numpy as np
        return _time_loops(lambda: (np.ones(10, np.float32), np.ones(10, np.float32)), _add_loop,
                           _iadd_loop, lambda: None, n, repeats)
    raise SystemExit(f"unknown worker {kind}")


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

def run_worker(python: str, kind: str, env: dict, n: int, repeats: int):
    cmd = [python, os.path.abspath(__file__), "--worker", kind, "--n", str(n), "--repeats", str(repeats)]
    proc = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1:] or ["failed"]
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.repeats)))
        return
    me = sys.executable
    rows = [
        ("MXNet 1.9.1", MXNET_PY, "mxnet", {}),
        ("mxref threaded + Cython", me, "mxref", {"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice"}),
        ("mxref threaded, pure Python", me, "mxref",
         {"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice", "MXREF_ENABLE_EXT": "0"}),
        ("mxref naive engine", me, "mxref", {"MXNET_ENGINE_TYPE": "NaiveEngine"}),
        ("PyTorch (1 thread)", TORCH_PY, "torch", {}),
        ("numpy", me, "numpy", {}),
    ]
    results = {}
    print(f"{args.n} ops per loop, median of {args.repeats} repeats, microseconds per op\n")
    print(f"{'':32s} {'c = a + b':>10s} {'a += 1':>10s}   {'vs MXNet (add / iadd)':>22s}")
    for label, python, kind, env in rows:
        if not os.path.exists(python):
            print(f"{label:32s} {'skipped: ' + python + ' not found'}")
            continue
        res, err = run_worker(python, kind, env, args.n, args.repeats)
        if res is None:
            print(f"{label:32s} failed: {err}")
            continue
        results[label] = res
        ref = results.get("MXNet 1.9.1")
        ratio = f"{res['add'] / ref['add']:9.2f}x / {res['iadd'] / ref['iadd']:.2f}x" if ref else ""
        print(f"{label:32s} {res['add']:10.2f} {res['iadd']:10.2f}   {ratio:>22s}")
    ref = results.get("MXNet 1.9.1")
    if ref:
        print("\nratios against MXNet 1.9.1 measured in this run (below 1 = faster than MXNet):")
        for label, res in results.items():
            print(f"  {label:32s} add {res['add'] / ref['add']:6.2f}   iadd {res['iadd'] / ref['iadd']:6.2f}")


if __name__ == "__main__":
    main()
