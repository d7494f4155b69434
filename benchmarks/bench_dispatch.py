"""Imperative dispatch cost: 20,000 x ``c = a + b`` and ``a += 1`` on 10-element float32 arrays.

Prints microseconds per operation (median of the repeats, each ending with a full wait) for mxref
(threaded engine with the Cython extensions, threaded pure Python, naive engine, and the plain
reference dispatch of ``invoke_plain.py``), numpy, and MXNet 1.9.1 and PyTorch when their virtual
environments exist; ratios are against MXNet. Every mxref row but the last takes the tuned
dispatch (the pure-Python row too: pure mode alone would pick the plain one).

    .venv/bin/python benchmarks/bench_dispatch.py [--n 20000] [--repeats 5] [--settle 0.5] [--before TREE]

``--before TREE`` adds rows for another checkout of mxref (its own ``benchmarks/bench_dispatch.py``
runs its worker), sampled in the same rounds: a before/after comparison in one run. The default
row runs each ``mx.nd`` call on the calling thread when the engine is idle
(``MXREF_ENGINE_RUN_INLINE=1``); the "handed to the worker" row turns that off.

Every framework runs in its own subprocess, so one's threads never slow another; the driver
takes one sample from each in turn, so load changes on a shared machine affect all alike.
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

def _sample(make, sync, n: int) -> dict:
    """One timed run of each loop: microseconds per op, ending with a full wait."""
    result = {}
    for name, loop in (("add", _add_loop), ("iadd", _iadd_loop)):
        a, b = make()
        sync()
        t0 = time.perf_counter()
        loop(a, b, n)
        sync()
        result[name] = (time.perf_counter() - t0) / n * 1e6
    return result


def _add_loop(a, b, n):
    for _ in range(n):
        c = a + b  # noqa: F841 - the assignment (and freeing the previous c) is part of the cost


def _iadd_loop(a, b, n):
    for _ in range(n):
        a += 1


def _setup(kind: str):
    """``(make, sync, info)`` for one framework: how to make two 10-element arrays and wait."""
    if kind == "mxref":
        sys.path.insert(0, ROOT)
        import mxref as mx
        from mxref._ext.loader import STATUS
        mx.nd.ones((1,)).wait_to_read()        # start the engine before timing
        info = {"engine": mx.engine.get().name, "ext": {k: v[0] for k, v in STATUS.items()},
                "dispatch": mx.nd.imperative.selected_paths()}
        return (lambda: (mx.nd.ones((10,)), mx.nd.ones((10,)))), mx.nd.waitall, info
    if kind == "mxnet":
        import mxnet as mx
        return (lambda: (mx.nd.ones((10,)), mx.nd.ones((10,)))), mx.nd.waitall, {}
    if kind == "torch":
        import torch
        torch.set_num_threads(1)
        return (lambda: (torch.ones(10), torch.ones(10))), (lambda: None), {}
    if kind == "numpy":
        import numpy as np
        return (lambda: (np.ones(10, np.float32), np.ones(10, np.float32))), (lambda: None), {}
    raise SystemExit(f"unknown worker {kind}")


def serve(kind: str, n: int) -> None:
    """Worker loop: print the setup info, then one JSON sample per input line until EOF."""
    make, sync, info = _setup(kind)
    _sample(make, sync, max(n // 10, 1))         # warm-up
    print(json.dumps(info), flush=True)
    for _ in sys.stdin:
        print(json.dumps(_sample(make, sync, n)), flush=True)


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

class Worker:
    """A framework in its own interpreter, producing one sample per request."""

    def __init__(self, python: str, kind: str, env: dict, n: int, script: str = ""):
        cmd = [python, script or os.path.abspath(__file__), "--worker", kind, "--n", str(n)]
        self.proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(self.proc.stderr.read().strip().splitlines()[-1:] or "failed to start")
        self.info = json.loads(line)

    def sample(self) -> dict:
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(self.proc.stderr.read().strip().splitlines()[-1:] or "worker died")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--settle", type=float, default=0.5,
                    help="seconds of pause before each sample (threads left spinning go to sleep)")
    ap.add_argument("--before", default="", help="another mxref checkout to compare with")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        serve(args.worker, args.n)
        return
    me = sys.executable
    rows = [
        ("MXNet 1.9.1", MXNET_PY, "mxnet", {}),
        ("mxref threaded + Cython", me, "mxref", {"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice"}),
        ("mxref threaded + Cython, handed to the worker", me, "mxref",
         {"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice", "MXREF_ENGINE_RUN_INLINE": "0"}),
        ("mxref threaded, pure Python", me, "mxref",
         {"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice", "MXREF_ENABLE_EXT": "0", "MXREF_PLAIN_PATHS": "0"}),
        ("mxref naive engine", me, "mxref", {"MXNET_ENGINE_TYPE": "NaiveEngine"}),
        ("mxref threaded, plain dispatch", me, "mxref",
         {"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice", "MXREF_PLAIN_PATHS": "1"}),
        ("PyTorch (1 thread)", TORCH_PY, "torch", {}),
        ("numpy", me, "numpy", {}),
    ]
    if args.before:
        before = os.path.join(os.path.abspath(args.before), "benchmarks", "bench_dispatch.py")
        threaded = {"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice"}
        rows[2:2] = [("before: threaded + Cython", me, "mxref", threaded, before),
                     ("before: naive engine", me, "mxref", {"MXNET_ENGINE_TYPE": "NaiveEngine"}, before)]
    workers, samples = {}, {}
    for label, python, kind, env, *script in rows:
        if not os.path.exists(python):
            print(f"{label}: skipped ({python} not found)")
            continue
        try:
            workers[label] = Worker(python, kind, env, args.n, *script)
            samples[label] = []
        except RuntimeError as exc:
            print(f"{label}: failed to start: {exc}")
    # Round-robin: one sample of each framework per round, so load changes on a shared machine
    # hit every framework alike and the ratios stay meaningful.
    # Before each sample a pause: the previous framework's threads must stop spinning first
    # (MXNet's OpenMP workers poll for a while after a parallel region), or the next sample shares
    # the two cores with them.
    for _ in range(args.repeats):
        for label, w in workers.items():
            time.sleep(args.settle)
            samples[label].append(w.sample())
    for w in workers.values():
        w.close()
    print(f"{args.n} ops per loop, median of {args.repeats} interleaved repeats, microseconds per op\n")
    print(f"{'':46s} {'c = a + b':>10s} {'a += 1':>10s}   {'add / iadd vs MXNet':>20s}")
    med = {label: {k: statistics.median(s[k] for s in ss) for k in ("add", "iadd")}
           for label, ss in samples.items()}
    ref = med.get("MXNet 1.9.1")
    for label, res in med.items():
        ratio = f"{res['add'] / ref['add']:.2f}x / {res['iadd'] / ref['iadd']:.2f}x" if ref else ""
        print(f"{label:46s} {res['add']:10.2f} {res['iadd']:10.2f}   {ratio:>20s}")
    for label, w in workers.items():
        if w.info:
            print(f"  {label}: {w.info}")


if __name__ == "__main__":
    main()
