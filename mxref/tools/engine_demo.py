"""The engine demo: watch the dependency engine run two independent matrix chains in parallel.

Run with ``python -m mxref.tools.engine_demo`` (``--help`` for the knobs). It builds two chains of matrix
products that share no data, runs them once one after the other (waiting in between) and once pushed
together, prints both times and the speed-up, and writes a Chrome trace (open it in
chrome://tracing or https://ui.perfetto.dev) in which the two chains appear on two worker rows.
"""
from __future__ import annotations

import argparse
import os
import time


def _parse(argv=None):
    p = argparse.ArgumentParser(prog="python -m mxref.tools.engine_demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=768, help="matrix side (default 768)")
    p.add_argument("--steps", type=int, default=12, help="matrix products per chain (default 12)")
    p.add_argument("--repeats", type=int, default=3, help="timed repeats; the median is shown")
    p.add_argument("--profile", default="profile_demo.json", help="Chrome-trace output file")
    p.add_argument("--workers", type=int, default=2, help="CPU worker threads (MXNET_CPU_WORKER_NTHREADS)")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = _parse(argv)
    # One BLAS thread per product: the parallelism shown is the engine's, not BLAS's.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("MXNET_CPU_WORKER_NTHREADS", str(args.workers))
    import numpy as np  # noqa: PLC0415 - after the thread settings

    import mxref as mx  # noqa: PLC0415

    mx.info()
    print()
    mx.random.seed(42)
    n = args.size
    a0 = mx.nd.random.uniform(-1, 1, shape=(n, n)) / np.sqrt(n)
    b0 = mx.nd.random.uniform(-1, 1, shape=(n, n)) / np.sqrt(n)

    def chain(x, tag):
        for _ in range(args.steps):
            x = mx.nd.dot(x, x.T) / 2 + x          # stays bounded; every step needs the previous
        return x

    def serial():
        ra = chain(a0, "A")
        ra.wait_to_read()                          # finish chain A before chain B starts
        rb = chain(b0, "B")
        rb.wait_to_read()
        return ra, rb

    def parallel():
        ra, rb = chain(a0, "A"), chain(b0, "B")    # both pushed; the engine overlaps them
        mx.nd.waitall()
        return ra, rb

    def timed(fn):
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t)
        return float(np.median(times)), out

    t_serial, (sa, sb) = timed(serial)
    t_par, (pa, pb) = timed(parallel)
    same = np.allclose(sa.asnumpy(), pa.asnumpy()) and np.allclose(sb.asnumpy(), pb.asnumpy())

    mx.profiler.set_config(profile_all=True, filename=args.profile, aggregate_stats=True)
    mx.profiler.set_state("run")
    parallel()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    print(f"two chains of {args.steps} products of {n}x{n} float32 matrices")
    print(f"  one after the other : {t_serial * 1e3:8.1f} ms")
    print(f"  pushed together     : {t_par * 1e3:8.1f} ms   speed-up {t_serial / t_par:.2f}x "
          f"with {args.workers} workers")
    print(f"  same results        : {same}")
    print(f"  profiler trace      : {os.path.abspath(args.profile)}")
    print()
    print(mx.profiler.dumps())
    return {"serial_s": t_serial, "parallel_s": t_par, "same": same, "trace": args.profile}


if __name__ == "__main__":
    main()
