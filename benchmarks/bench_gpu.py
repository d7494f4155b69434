"""GPU speed figures (a real GPU only; under the emulator see bench_gpu_launch.py).

    MXREF_CUDA=pycuda PYTHONPATH=. python benchmarks/bench_gpu.py

Prints, with the device name, medians of 5 repeats:
* elementwise add bandwidth (3 arrays moved per element) against the device's own
  device-to-device copy bandwidth (cuMemcpyDtoD), and the ratio (target >= 80%);
* GEMM TFLOP/s of the teaching tiled kernel, of cuBLAS (ctypes, when libcublas loads), and of
  torch.matmul (when torch is installed), with ratios to torch (targets >= 25% and >= 90%);
* training samples/s of the MLP benchmark model on gpu(0) through mx.mod.Module.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import statistics
import time

import numpy as np


def timed(fn, sync, iters=20, repeats=5):
    fn()
    sync()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        runs.append((time.perf_counter() - t0) / iters)
    return statistics.median(runs)


def main():
    os.environ.setdefault("MXREF_CUDA", "pycuda")
    import mxref as mx
    from mxref._ext.cuda import runtime
    from mxref.ops.gpu import gemm as g
    from mxref.ops.gpu.harness import to_device
    be = runtime.backend()
    if be.name != "pycuda":
        raise SystemExit("bench_gpu.py measures a real GPU: set MXREF_CUDA=pycuda")
    drv = be.drv
    print("device:", be.device_name(0))

    def sync():
        with be._on(0):
            drv.Context.synchronize()
    n = 1 << 26
    a, b, c = (to_device(np.ones(n, np.float32)) for _ in range(3))
    add = runtime.module("elementwise", np.float32).get_function("binary_op")
    from mxref.ops.gpu._launch import opcodes
    code = opcodes("elementwise")["add"]
    t_add = timed(lambda: add(a, b, c, code, n, 0, grid=(4096,), block=(256,)), sync)
    t_copy = timed(lambda: be.memcpy_dtod(c.ptr, a.ptr, a.nbytes), sync)
    bw_add, bw_copy = 3 * a.nbytes / t_add / 1e9, 2 * a.nbytes / t_copy / 1e9
    print(f"elementwise add   {bw_add:8.1f} GB/s   device copy {bw_copy:8.1f} GB/s   "
          f"ratio {bw_add / bw_copy:.2f}")
    m = 4096
    A, B, C = (to_device(np.random.rand(m, m).astype(np.float32)) for _ in range(3))

    class Octx:
        run_ctx = None
        ctx = mx.gpu(0)
    t_tiled = timed(lambda: g.gemm(Octx, A, B, C, m, m, m, False, False, "write"), sync, iters=3)
    flops = 2 * m ** 3
    rows = {"teaching tiled GEMM": flops / t_tiled / 1e12}
    lib = ctypes.util.find_library("cublas")
    if lib:
        cublas = ctypes.CDLL(lib)
        handle = ctypes.c_void_p()
        be._ctx[0].push()
        cublas.cublasCreate_v2(ctypes.byref(handle))
        one, zero = ctypes.c_float(1), ctypes.c_float(0)

        def sgemm():   # row-major C = A B is column-major C^T = B^T A^T
            cublas.cublasSgemm_v2(handle, 0, 0, m, m, m, ctypes.byref(one), ctypes.c_void_p(B.ptr), m,
                                  ctypes.c_void_p(A.ptr), m, ctypes.byref(zero), ctypes.c_void_p(C.ptr), m)
        t_cublas = timed(sgemm, drv.Context.synchronize, iters=10)
        drv.Context.pop()
        rows["cuBLAS sgemm (ctypes)"] = flops / t_cublas / 1e12
    try:
        import torch
        ta, tb = torch.rand(m, m, device="cuda"), torch.rand(m, m, device="cuda")
        rows["torch.matmul"] = flops / timed(lambda: ta @ tb, torch.cuda.synchronize, iters=10) / 1e12
    except ImportError:
        pass
    for label, tf in rows.items():
        ratio = f"   {tf / rows['torch.matmul']:.2f} of torch" if "torch.matmul" in rows else ""
        print(f"{label:<24} {tf:7.2f} TFLOP/s{ratio}")
    from mxref.tools.demo import build_network
    data = mx.sym.Variable("data")
    mlp = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Activation(
        mx.sym.FullyConnected(data, num_hidden=512), act_type="relu"), num_hidden=10), name="softmax")
    for label, net, shape in (("MLP 784-512-10", mlp, (784,)),
                              ("demo LeNet, 28x28 input", build_network("lenet", mx), (1, 28, 28))):
        x = np.random.rand(6400, *shape).astype(np.float32)
        y = np.random.randint(0, 10, 6400).astype(np.float32)
        it = mx.io.NDArrayIter(x, y, batch_size=128)
        mod = mx.mod.Module(net, context=mx.gpu(0))
        mod.fit(it, num_epoch=1, optimizer="sgd")        # bind, compile, warm up
        rates = []
        for _ in range(3):
            it.reset()
            t0 = time.perf_counter()
            mod.fit(it, num_epoch=1, optimizer="sgd", force_init=False)
            mx.nd.waitall()
            rates.append(6400 / (time.perf_counter() - t0))
        print(f"{label} training on gpu(0): {statistics.median(rates):.0f} samples/s (median of 3 epochs)")


if __name__ == "__main__":
    main()
