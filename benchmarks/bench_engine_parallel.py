"""Engine parallelism: two independent chains of 20 matmuls (1024 x 1024 float32, BLAS on 1 thread).

The naive engine runs the 40 matmuls one after another; the threaded engine with 2 CPU workers can
run the two chains side by side (numpy releases the GIL inside BLAS), so on 2 cores its wall time
should be close to half. The same program runs on MXNet 1.9.1 (``mx.nd.dot``, NaiveEngine vs
ThreadedEnginePerDevice with ``MXNET_CPU_WORKER_NTHREADS=2``) when its interpreter exists.

    .venv/bin/python benchmarks/bench_engine_parallel.py [--repeats 5] [--mxnet PYTHON] [--no-mxnet]

Each timed run is its own subprocess (engines and thread pools never share a process; each warms
up once first), and the configurations alternate within every repeat; times are medians. For
mxref it also prints the *concurrency*: the summed duration of the matmuls divided by the wall
time, i.e. how many ran at once on average. That number shows the engine overlapping the chains
even on a machine whose cores are busy with other work, where the wall-time speedup cannot show.
A control runs the same chains on two plain Python threads: its sequential / threaded ratio, paired
with each repeat, is the most any engine could gain on the machine at that moment.
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


def run_plain_threads(repeats: int) -> list:
    """The control: the same two chains on two plain Python threads, and one after the other.

    Returns ``[(sequential_s, two_threads_s), ...]``: their ratio is the most any engine could
    gain on this machine at this moment (less than 2 when other programs hold the cores).
    """
    import threading
    import time

    import numpy as np
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)

    def chain(x, out):
        for _ in range(CHAIN):
            out_buf = np.empty_like(x)
            np.matmul(x, w, out=out_buf)
            x = out_buf

    samples = []
    for _ in range(repeats + 1):
        xs = [rng.standard_normal((N, N)).astype(np.float32) for _ in range(2)]
        t0 = time.perf_counter()
        for x in xs:
            chain(x, None)
        seq = time.perf_counter() - t0
        threads = [threading.Thread(target=chain, args=(x, None)) for x in xs]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        samples.append((seq, time.perf_counter() - t0))
    return samples[1:]


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
    if args.worker == "plain":
        print(json.dumps(run_plain_threads(args.repeats)))
        return
    if args.worker:
        print(json.dumps(run_mxref(args.worker, args.repeats)))
        return

    print(f"two chains of {CHAIN} matmuls {N}x{N} float32, BLAS 1 thread, {args.repeats} paired repeats")

    def me(worker):
        return [sys.executable, __file__, "--worker", worker, "--repeats", "1"]
    configs = [("plain", me("plain"), {}), ("mxref naive", me("naive"), {}),
               ("mxref threaded", me("threaded"), {})]
    if not args.no_mxnet and os.path.exists(args.mxnet):
        script = MXNET_SCRIPT % (N, CHAIN, 1)
        configs += [(f"mxnet {engine}", [args.mxnet, "-c", script],
                     {"MXNET_ENGINE_TYPE": name, "MXNET_CPU_WORKER_NTHREADS": "2"})
                    for engine, name in (("naive", "NaiveEngine"), ("threaded", "ThreadedEnginePerDevice"))]
    # NOTE: configurations alternate within each repeat, so a change in the machine's load hits
    # naive and threaded alike; speedups are medians of the per-repeat (paired) ratios.
    samples = {name: [] for name, _, _ in configs}
    for _ in range(args.repeats):
        for name, argv, env in configs:
            samples[name].append(subprocess_run(argv, env)[0])
    ceiling = [seq / par for seq, par in samples.pop("plain")]
    times = {name: [s[0] if isinstance(s, list) else s for s in v] for name, v in samples.items()}
    for name, ts in times.items():
        runs = ", ".join(f"{t * 1000:.0f}" for t in ts)
        line = f"  {name:<16} {statistics.median(ts) * 1000:8.1f} ms   (runs: {runs})"
        if name.startswith("mxref"):      # mxref samples are (wall, summed matmul time)
            line += f"   concurrency {statistics.median(b / t for t, b in samples[name]):.2f}"
        print(line)
    print(f"  ceiling (plain threads, sequential / 2 threads): {statistics.median(ceiling):.2f}x "
          f"(per repeat: {', '.join(f'{c:.2f}' for c in ceiling)})")
    for system in ("mxref", "mxnet"):
        if f"{system} naive" in times:
            ratios = [n / t for n, t in zip(times[f"{system} naive"], times[f"{system} threaded"])]
            print(f"  {system} speedup threaded/naive: {statistics.median(ratios):.2f}x "
                  f"(per repeat: {', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
