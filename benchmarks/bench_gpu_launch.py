"""Kernel-launch overhead of the GPU runtime under the CUDA emulator (the only GPU figure this
machine can give: the emulator is a correctness tool, not a speed path).

    MXREF_CUDA=emulate python benchmarks/bench_gpu_launch.py

Prints the median over repeats of: one direct launch of an empty-ish kernel (1 block of 32
threads, n = 0: the Python packing + ctypes + fiber start-up), the same with bounds checking off,
one 256-thread block of a real elementwise kernel, and ``mx.nd.relu`` on gpu(0) through the engine.
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np


def median_us(fn, iters, repeats=5):
    fn()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        runs.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(runs)


def main():
    os.environ.setdefault("MXREF_CUDA", "emulate")
    import mxref as mx
    from mxref._ext.cuda import runtime
    from mxref.ops.gpu.harness import to_device
    be = runtime.backend()
    fn = runtime.module("elementwise", np.float32).get_function("unary_op")
    x, y = to_device(np.ones(256, np.float32)), to_device(np.zeros(256, np.float32))
    rows = [("launch, n=0, 1 block x 32 threads", median_us(
        lambda: fn(x, y, 1, 0, 0, grid=(1,), block=(32,)), 2000))]
    be.check = False
    fn_nc = runtime.SourceModule(runtime.KERNEL_DIR / "elementwise.cu",
                                 ["-Dreal_t=float"]).get_function("unary_op")
    rows.append(("launch, n=0, 1 x 32, bounds checks off", median_us(
        lambda: fn_nc(x, y, 1, 0, 0, grid=(1,), block=(32,)), 2000)))
    be.check = True
    rows.append(("relu, n=256, 1 block x 256 threads", median_us(
        lambda: fn(x, y, 1, 256, 0, grid=(1,), block=(256,)), 1000)))
    a = mx.nd.ones((256,), ctx=mx.gpu(0))
    mx.nd.waitall()
    rows.append(("mx.nd.relu on gpu(0), n=256, + waitall", median_us(
        lambda: (mx.nd.relu(a), mx.nd.waitall()), 500)))
    host = mx.nd.ones((256,))
    rows.append(("mx.nd.relu on cpu(0), n=256, + waitall", median_us(
        lambda: (mx.nd.relu(host), mx.nd.waitall()), 500)))
    print(f"backend: {runtime.backend_name()}")
    for label, us in rows:
        print(f"{label:<44} {us:9.1f} us")
    print(f"ratio gpu(0)-emulated / cpu(0) op: {rows[3][1] / rows[4][1]:.1f}x")


if __name__ == "__main__":
    main()
