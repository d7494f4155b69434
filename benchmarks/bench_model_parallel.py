"""Model parallelism: pipeline throughput, cross-device copy bandwidth, model-parallel MF vs MXNet.

    .venv/bin/python benchmarks/bench_model_parallel.py [--repeats 5] [--parts pipeline,copy,mf]

1. **pipeline** — a deep MLP (``--layers`` x 1024 units, batch ``--batch`` = 1024, SGD) trained by
   ``mxref.parallel.Pipeline``: two stages on ``cpu(0)``/``cpu(1)`` with 4 micro-batches, one
   thread per operator and one worker per device (2 threads), against the same model on one device
   with the same 2 threads, given either as 2 engine workers (``MXNET_CPU_WORKER_NTHREADS=2``) or
   as 2 operator threads splitting each GEMM (``MXNET_OMP_MAX_THREADS=2``). The pipelined run
   also reports the profiler's busy fraction of each device and of both at once.
2. **copy** — MB/s of ``_CrossDeviceCopy`` between ``cpu(0)`` and ``cpu(1)`` (64 MB float32): the
   imperative ``copyto`` and the executor's copy node pushed alone, against ``numpy.copyto`` of
   the same bytes.
3. **mf** — ``examples/model_parallel/matrix_factorization.py`` (embeddings on ``cpu(0)``, dense
   layers on ``cpu(1)``), samples/s of mxref against MXNet 1.9.1 running the same file with the
   same ``group2ctxs`` (the example imports ``mxref``; the MXNet run maps that name to ``mxnet``).

Every measurement is a fresh subprocess, the configurations alternate within each repeat, and
the figures are medians over repeats (OpenBLAS on one thread everywhere). A control, run in every
repeat, times the same matmuls on two plain Python threads against one: on a machine whose
cores other programs share, that ratio (not 2) is the most any two-device scheme could gain.
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
BASE_ENV = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice"}
PIPE_CONFIGS = {
    "pipeline 2 devices, m=4 (1 worker, 1 op thread each)": ("pipe4", {"MXNET_OMP_MAX_THREADS": "1",
                                                                      "OMP_NUM_THREADS": "1"}),
    "pipeline 2 devices, m=2 (1 worker, 1 op thread each)": ("pipe2", {"MXNET_OMP_MAX_THREADS": "1",
                                                                      "OMP_NUM_THREADS": "1"}),
    "1 device, 2 engine workers": ("one", {"MXNET_OMP_MAX_THREADS": "1", "OMP_NUM_THREADS": "1",
                                           "MXNET_CPU_WORKER_NTHREADS": "2"}),
    "1 device, 2 op threads (GEMM split)": ("one", {"MXNET_OMP_MAX_THREADS": "2", "OMP_NUM_THREADS": "2",
                                                    "MXNET_CPU_WORKER_NTHREADS": "1"}),
}


def run_worker(python, args, env_extra):
    env = dict(os.environ, **BASE_ENV, **env_extra, PYTHONPATH=ROOT)
    out = subprocess.run([python, os.path.abspath(__file__), *args], check=True, capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=600).stdout
    return json.loads(out.strip().splitlines()[-1])


# -- workers (each in its own process) --------------------------------------------------------------
def worker_pipeline(kind, layers, steps, batch):
    import numpy as np

    import mxref as mx
    from mxref.parallel import Pipeline
    from mxref.parallel.trace import busy_report

    def stage(first, last):
        h = mx.sym.Variable("data")
        for i in range(first, last):
            h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=1024, name=f"fc{i}"), act_type="relu")
        return h

    half = layers // 2
    stages = [stage(0, half), mx.sym.SoftmaxOutput(mx.sym.FullyConnected(stage(half, layers), num_hidden=10,
                                                                         name="cls"), name="softmax")]
    ctxs, m = ([mx.cpu(0), mx.cpu(1)], int(kind[4:])) if kind.startswith("pipe") else ([mx.cpu(0)] * 2, 1)
    pipe = Pipeline(stages, ctxs, {"data": (batch, 1024)}, {"softmax_label": (batch,)}, num_microbatches=m,
                    optimizer_params={"learning_rate": 0.01})
    rng = np.random.RandomState(0)
    x = rng.randn(batch, 1024).astype(np.float32)
    y = rng.randint(0, 10, batch).astype(np.float32)
    for _ in range(3):
        pipe.step(data=x, softmax_label=y)
    mx.nd.waitall()
    t0 = time.perf_counter()
    for _ in range(steps):
        pipe.step(data=x, softmax_label=y)
    mx.nd.waitall()
    rate = steps * batch / (time.perf_counter() - t0)
    report = {}
    if kind.startswith("pipe"):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench_mp_trace_{os.getpid()}.json")
        mx.profiler.dumps(reset=True)          # start from an empty record
        mx.profiler.set_config(profile_all=True, filename=path)
        mx.profiler.set_state("run")
        for _ in range(2):
            pipe.step(data=x, softmax_label=y)
        mx.nd.waitall()
        mx.profiler.set_state("stop")
        mx.profiler.dump()
        with open(path) as f:
            report = busy_report(json.load(f), ["cpu(0)", "cpu(1)"])
        os.remove(path)
    return {"rate": rate, **report}


def worker_control(n_matmuls):
    """The machine's headroom now: the same matmuls (256 x 1024 by 1024 x 1024) one after the
    other and split over two plain threads; the ratio is the most two devices could gain."""
    import threading

    import numpy as np
    a = np.random.rand(256, 1024).astype(np.float32)
    w = np.random.rand(1024, 1024).astype(np.float32)

    def chain(k):
        out = np.empty((256, 1024), np.float32)
        for _ in range(k):
            np.matmul(a, w, out=out)

    chain(4)
    t0 = time.perf_counter()
    chain(n_matmuls)
    seq = time.perf_counter() - t0
    threads = [threading.Thread(target=chain, args=(n_matmuls // 2,)) for _ in range(2)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"rate": seq / (time.perf_counter() - t0)}


def worker_copy(megabytes, iters):
    import numpy as np

    import mxref as mx
    n = megabytes * (1 << 20) // 4
    src = mx.nd.ones((n,), ctx=mx.cpu(0))
    dst = mx.nd.zeros((n,), ctx=mx.cpu(1))
    with mx.AttrScope(ctx_group="b"):
        sym = mx.sym.identity(mx.sym.Variable("x"), name="y")
    ex = sym.bind(mx.cpu(0), {"x": src}, group2ctx={"b": mx.cpu(1)})
    seg = next(s for s in ex._fwd_segments if s.ops[0].op_name == "_CrossDeviceCopy")
    a, b = np.ones(n, np.float32), np.zeros(n, np.float32)

    def timed(fn, sync):
        fn()
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        return megabytes * iters / (time.perf_counter() - t0)

    return {"copyto": timed(lambda: src.copyto(dst), mx.nd.waitall),
            "executor copy node": timed(lambda: seg.push(mx.cpu(0), False), mx.nd.waitall),
            "numpy": timed(lambda: np.copyto(b, a), lambda: None)}


def worker_mf(epochs):
    if os.environ.get("BENCH_PEER") == "mxnet":
        import mxnet
        sys.modules["mxref"] = mxnet
    sys.path.insert(0, os.path.join(ROOT, "examples", "model_parallel"))
    import matrix_factorization as mf
    _, speeds = mf.train(epochs=epochs, devices=2, log=lambda *_: None)
    return {"rate": statistics.median(speeds[1:])}        # epoch 0 warms up


# -- driver ---------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--parts", default="pipeline,copy,mf")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--mxnet", default=MXNET_PY)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--arg", action="append", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        fn = {"pipeline": worker_pipeline, "copy": worker_copy, "mf": worker_mf,
              "control": worker_control}[args.worker]
        print(json.dumps(fn(*[int(a) if a.isdigit() else a for a in args.arg])))
        return
    parts = args.parts.split(",")
    me = sys.executable
    if "pipeline" in parts:
        results = {name: [] for name in PIPE_CONFIGS}
        control = []
        for _ in range(args.repeats):
            control.append(run_worker(me, ["--worker", "control", "--arg", "200"], {})["rate"])
            for name, (kind, env) in PIPE_CONFIGS.items():
                results[name].append(run_worker(me, ["--worker", "pipeline", "--arg", kind, "--arg",
                                                     str(args.layers), "--arg", str(args.steps), "--arg",
                                                     str(args.batch)], env))
        print(f"pipeline: {args.layers} x FC(1024) + classifier, batch {args.batch} (4 micro-batches), SGD; "
              f"median of {args.repeats}")
        rates = {n: statistics.median(r["rate"] for r in rs) for n, rs in results.items()}
        names = list(rates)
        for name in names:
            line = f"  {name:54s} {rates[name]:8.0f} samples/s"
            if name.startswith("pipeline"):
                rs = results[name]
                busy = {k: statistics.median(r[k] for r in rs) for k in ("cpu(0)", "cpu(1)", "both")}
                line += (f"   busy: cpu(0) {busy['cpu(0)']:.2f}, cpu(1) {busy['cpu(1)']:.2f}, "
                         f"both {busy['both']:.2f}")
            print(line)
        print(f"  control: two plain threads / one, same matmuls: {statistics.median(control):.2f} "
              "(the most two devices could gain on this machine at the time)")
        for pipe in names[:2]:
            for one in names[2:]:
                # per repeat, then the median: the configurations of one repeat ran back to back
                paired = statistics.median(p["rate"] / o["rate"] for p, o in zip(results[pipe], results[one]))
                print(f"  {pipe.split(' (')[0]} / {one}: {paired:.2f}")
    if "copy" in parts:
        rs = [run_worker(me, ["--worker", "copy", "--arg", "64", "--arg", "10"], {})
              for _ in range(args.repeats)]
        print(f"copy: 64 MB float32 cpu(0) -> cpu(1); median of {args.repeats}")
        numpy_rate = statistics.median(r["numpy"] for r in rs)
        for key in ("copyto", "executor copy node", "numpy"):
            rate = statistics.median(r[key] for r in rs)
            print(f"  {key:20s} {rate:8.0f} MB/s   / numpy = {rate / numpy_rate:.2f}")
    if "mf" in parts:
        mine, peer = [], []
        have_peer = os.path.exists(args.mxnet)
        for _ in range(args.repeats):
            mine.append(run_worker(me, ["--worker", "mf", "--arg", "4"], {})["rate"])
            if have_peer:
                peer.append(run_worker(args.mxnet, ["--worker", "mf", "--arg", "4"],
                                       {"BENCH_PEER": "mxnet"})["rate"])
        print(f"matrix factorization (group2ctxs dev1=cpu(0), dev2=cpu(1)); median of {args.repeats}")
        print(f"  mxref        {statistics.median(mine):8.0f} samples/s")
        if have_peer:
            print(f"  MXNet 1.9.1  {statistics.median(peer):8.0f} samples/s   mxref / MXNet = "
                  f"{statistics.median(mine) / statistics.median(peer):.2f}")


if __name__ == "__main__":
    main()
