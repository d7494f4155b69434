"""Engine parallelism: two independent chains of 20 matmuls (1024 x 1024 float32, BLAS on 1 thread).

The naive engine runs the 40 matmuls one after another; the threaded engine with 2 CPU workers can
run the two chains side by side (numpy releases the GIL inside BLAS), so on 2 cores its wall time
should be close to half. The same program runs on MXNet 1.9.1 (``mx.nd.dot``, NaiveEngine vs
ThreadedEnginePerDevice with ``MXNET_CPU_WORKER_NTHREADS=2``) when its interpreter exists.

    .venv/bin/python benchmarks/bench_engine_parallel.py [--repeats 5] [--mxnet PYTHON] [--no-mxnet]

Each configuration runs in its own subprocess (engines and thread pools never share a process);
times are medians of the repeats. For mxref it also prints the *concurrency*: the summed duration
of the matmuls divided by the wall time, i.e. how many ran at once on average. That number shows
the engine overlapping the chains even on a machine whose cores are busy with other work, where
the wall-time speedup cannot show.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MXNET_PY = "/work/venvs/mxnet191/bin/python"
N, CHAIN = 1024, 20
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run_mxref(engine: str, repeats: int) -> list:
    """Push the two chains as engine ops (numpy matmul into preallocated outputs); time to waitall."""
    sys.path.insert(0, ROOT)
    import time

    import numpy as np

    import mxref as mx
    from mxref.engine.naive import NaiveEngine
    from mxref.engine.threaded import ThreadedEnginePerDevice

    eng = NaiveEngine() if engine == "naive" else ThreadedEnginePerDevice(cpu_worker_nthreads=2)
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)
    wvar = eng.new_variable()
    samples, spans = [], []
    clock = time.perf_counter

    def matmul(a, o):
        t = clock()
        np.matmul(a, w, out=o)
        spans.append(clock() - t)
    for _ in range(repeats + 1):                                   # the first run warms up
        chains = []
        for _c in range(2):
            bufs = [rng.standard_normal((N, N)).astype(np.float32)] + \
                   [np.empty((N, N), np.float32) for _ in range(CHAIN)]
            chains.append((bufs, [eng.new_variable() for _ in bufs]))
        spans.clear()
        t0 = clock()
        for k in range(CHAIN):
            for bufs, vs in chains:                                # interleave the chains' pushes
                eng.push_sync(lambda r, a=bufs[k], o=bufs[k + 1]: matmul(a, o), mx.cpu(),
                              (vs[k], wvar), (vs[k + 1],), name="matmul")
        eng.wait_for_all()
        samples.append((clock() - t0, sum(spans)))
    eng.stop()
    return samples[1:]


MXNET_SCRIPT = r"""
import json, sys, time
import mxnet as mx
N, CHAIN, repeats = %d, %d, %d
w = mx.nd.random.normal(shape=(N, N)) / N ** 0.5
samples = []
for _ in range(repeats + 1):
    xs = [mx.nd.random.normal(shape=(N, N)) for _ in range(2)]
    mx.nd.waitall()
    t0 = time.perf_counter()
    for k in range(CHAIN):
        xs = [mx.nd.dot(x, w) for x in xs]
    mx.nd.waitall()
    samples.append(time.perf_counter() - t0)
print(json.dumps(samples[1:]))
"""


def subprocess_run(argv, env_extra) -> list:
    env = dict(os.environ, **ONE_THREAD, **env_extra)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--mxnet", default=MXNET_PY, help="python of an MXNet 1.9.1 environment")
    ap.add_argument("--no-mxnet", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(run_mxref(args.worker, args.repeats)))
        return

    print(f"two chains of {CHAIN} matmuls {N}x{N} float32, BLAS 1 thread, median of {args.repeats}")
    results = {}
    for engine in ("naive", "threaded"):
        results[f"mxref {engine}"] = subprocess_run(
            [sys.executable, __file__, "--worker", engine, "--repeats", str(args.repeats)], {})
    if not args.no_mxnet and os.path.exists(args.mxnet):
        script = MXNET_SCRIPT % (N, CHAIN, args.repeats)
        for engine, name in (("naive", "NaiveEngine"), ("threaded", "ThreadedEnginePerDevice")):
            results[f"mxnet {engine}"] = subprocess_run(
                [args.mxnet, "-c", script],
                {"MXNET_ENGINE_TYPE": name, "MXNET_CPU_WORKER_NTHREADS": "2"})
    busy = {k: [b / t for t, b in v] for k, v in results.items() if k.startswith("mxref")}
    results = {k: [s[0] if isinstance(s, list) else s for s in v] for k, v in results.items()}
    med = {k: statistics.median(v) for k, v in results.items()}
    for k, v in med.items():
        line = f"  {k:<16} {v * 1000:8.1f} ms   (runs: {', '.join(f'{s * 1000:.0f}' for s in results[k])})"
        if k in busy:
            line += f"   concurrency {statistics.median(busy[k]):.2f}"
        print(line)
    for system in ("mxref", "mxnet"):
        if f"{system} naive" in med:
            ratio = med[f"{system} naive"] / med[f"{system} threaded"]
            print(f"  {system} speedup threaded/naive: {ratio:.2f}x")


if __name__ == "__main__":
    main()
