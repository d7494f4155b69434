"""KVStore ``local`` push+pull throughput over two CPU contexts, mxref vs MXNet 1.9.1 (and the numpy floor).

One iteration pushes an MLP's gradients (784-512-512-10, plus one 4M-element key that takes the
multi-threaded reduce path) from ``cpu(0)`` and ``cpu(1)`` with ``priority=-index``, and pulls
every key back to both contexts, then waits. ``replace`` has no updater; ``sgd`` updates with
SGD(momentum=0.9) inside the store. Prints milliseconds per iteration (median of the repeats).
Then the bandwidth workload: 20 keys x 1M float32 pushed from both contexts and pulled back to
both, in MB/s (bytes pushed + pulled, 10^6 bytes per MB).

    .venv/bin/python benchmarks/bench_kvstore_local.py [--iters 10] [--repeats 5]

Each framework runs in its own subprocess. numpy is the same arithmetic with no store at all:
one sum per key, the SGD formulas, two copies back.
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
SHAPES = [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,), (4_000_000,)]
WORKLOADS = {"mlp": SHAPES, "20x1M": [(1_000_000,)] * 20}


def _store_run(mx, mode: str, iters: int, repeats: int, shapes=SHAPES) -> list:
    import numpy as np
    ctxs = [mx.cpu(0), mx.cpu(1)]
    rng = np.random.default_rng(0)
    kv = mx.kv.create("local")
    if mode == "sgd":
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.01, momentum=0.9))
    for k, s in enumerate(shapes):
        kv.init(k, mx.nd.array(rng.standard_normal(s).astype(np.float32)))
    grads = [[mx.nd.array(rng.standard_normal(s).astype(np.float32), ctx=c) for c in ctxs]
             for s in shapes]
    outs = [[mx.nd.zeros(s, ctx=c) for c in ctxs] for s in shapes]

    def one():
        for k in range(len(shapes)):
            kv.push(k, grads[k], priority=-k)
            kv.pull(k, out=outs[k], priority=-k)

    one()
    mx.nd.waitall()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            one()
        mx.nd.waitall()
        times.append((time.perf_counter() - t0) / iters * 1e3)
    return times


def _numpy_run(mode: str, iters: int, repeats: int, shapes=SHAPES) -> list:
    import numpy as np
    rng = np.random.default_rng(0)
    w = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    m = [np.zeros(s, np.float32) for s in shapes]
    g = [[rng.standard_normal(s).astype(np.float32) for _ in range(2)] for s in shapes]
    outs = [[np.empty(s, np.float32) for _ in range(2)] for s in shapes]
    buf = [np.empty(s, np.float32) for s in shapes]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            for k in range(len(shapes)):
                np.add(g[k][0], g[k][1], out=buf[k])
                if mode == "sgd":
                    m[k] *= 0.9
                    m[k] -= 0.01 * buf[k]
                    w[k] += m[k]
                else:
                    w[k][...] = buf[k]
                for o in outs[k]:
                    o[...] = w[k]
        times.append((time.perf_counter() - t0) / iters * 1e3)
    return times


def worker(kind: str, mode: str, iters: int, repeats: int, workload: str = "mlp") -> None:
    shapes = WORKLOADS[workload]
    if kind == "numpy":
        print(json.dumps(_numpy_run(mode, iters, repeats, shapes)))
        return
    if kind == "mxref":
        sys.path.insert(0, ROOT)
        import mxref as mx
        if not hasattr(mx, "kv"):
            from mxref import kvstore
            mx.kv = kvstore
    else:
        import mxnet as mx
    print(json.dumps(_store_run(mx, mode, iters, repeats, shapes)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--workload", choices=list(WORKLOADS), default="mlp", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, args.iters, args.repeats, args.workload)
        return
    rows = [("MXNet 1.9.1", MXNET_PY, "mxnet", {}),
            ("mxref threaded + Cython", sys.executable, "mxref", {}),
            ("mxref naive engine", sys.executable, "mxref", {"MXNET_ENGINE_TYPE": "NaiveEngine"}),
            ("numpy (no store)", sys.executable, "numpy", {})]
    print(f"ms per iteration ({len(SHAPES)} keys, {sum(map(_size, SHAPES)) / 1e6:.2f}M floats, "
          f"2 contexts), median of {args.repeats} x {args.iters} iterations\n")
    print(f"{'':28s} {'replace':>9s} {'sgd':>9s}   vs MXNet")
    ref = None
    for label, python, kind, env in rows:
        if not os.path.exists(python):
            print(f"{label}: skipped ({python} not found)")
            continue
        res = []
        for mode in ("replace", "sgd"):
            cmd = [python, os.path.abspath(__file__), "--worker", kind, mode,
                   "--iters", str(args.iters), "--repeats", str(args.repeats)]
            out = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(f"{label} failed:\n{out.stderr[-2000:]}")
            res.append(statistics.median(json.loads(out.stdout.strip().splitlines()[-1])))
        ref = ref or res
        ratio = f"{res[0] / ref[0]:.2f}x / {res[1] / ref[1]:.2f}x"
        print(f"{label:28s} {res[0]:9.2f} {res[1]:9.2f}   {ratio}")
    bandwidth(rows, args)


def bandwidth(rows, args) -> None:
    """20 keys x 1M float32 from two contexts, no updater: MB/s of pushed + pulled bytes."""
    nbytes = 20 * 1_000_000 * 4 * 2 * 2          # 2 contexts push, 2 contexts pull
    print(f"\n20 keys x 1M float32, push from 2 contexts + pull to 2 contexts, no updater: MB/s "
          f"(median of {args.repeats} x {args.iters} iterations)\n")
    ref = None
    for label, python, kind, env in rows:
        if not os.path.exists(python):
            continue
        cmd = [python, os.path.abspath(__file__), "--worker", kind, "replace", "--workload", "20x1M",
               "--iters", str(args.iters), "--repeats", str(args.repeats)]
        out = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"{label} failed:\n{out.stderr[-2000:]}")
        mbps = nbytes / statistics.median(json.loads(out.stdout.strip().splitlines()[-1])) / 1e3
        ref = ref or mbps
        print(f"{label:28s} {mbps:9.0f} MB/s   {mbps / ref:.2f}x")


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


if __name__ == "__main__":
    main()
