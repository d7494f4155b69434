"""Executor throughput: forward+backward samples/s of an MLP and LeNet-5, mxref vs MXNet 1.9.1 vs PyTorch.

Models (grad_req 'write' for parameters, 'null' for data and labels, as ``Module`` binds them):

* MLP 784-512-512-10 (ReLU, softmax cross-entropy), batch 128;
* LeNet-5 on 1x28x28 (conv5x5x20, tanh, maxpool2, conv5x5x50, tanh, maxpool2, fc500, tanh, fc10), batch 64;
* ``tiny``: 50 layers of FullyConnected(4) + ReLU at batch 1, 202 nodes whose kernels cost almost
  nothing, so samples/s measures the per-node cost of the framework itself.

Each system runs in its own subprocess with the same thread count ``T`` (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` = T, ``torch.set_num_threads(T)``,
``MXNET_CPU_WORKER_NTHREADS`` = 1 for MXNet and mxref): mxref's Executor (threaded engine,
Cython core), MXNet 1.9.1 ``simple_bind`` (``/work/venvs/mxnet191``), PyTorch 2.13 eager
(``/work/venvs/torch213``) and, for the MLP, a hand-written numpy forward+backward. Each worker
times ``--repeats`` blocks of ``--iters`` iterations after a warm-up and reports the median.

Run::

    .venv/bin/python benchmarks/bench_executor.py                  # all models, T=2, wall clock
    .venv/bin/python benchmarks/bench_executor.py --models mlp --threads 1 --rounds 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from bench_common import add_timing_arguments, alternate, symbol_net, time_steps
from bench_common import measure as _measure

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHONS = {
    "mxref": os.path.join(ROOT, ".venv", "bin", "python"),
    "numpy": os.path.join(ROOT, ".venv", "bin", "python"),
    "mxnet": os.environ.get("MXNET191_PYTHON", "/work/venvs/mxnet191/bin/python"),
    "torch": os.environ.get("TORCH213_PYTHON", "/work/venvs/torch213/bin/python"),
}
BATCH = {"mlp": 128, "lenet": 64, "tiny": 1}
SHAPE = {"mlp": (784,), "lenet": (1, 28, 28), "tiny": (4,)}
ITERS = {"mlp": 20, "lenet": 5, "tiny": 50}




def run_symbolic(mx, model, iters, repeats):
    """mxref or MXNet: simple_bind, then forward(is_train=True) + backward() per iteration."""
    import numpy as np  # noqa: PLC0415
    batch = BATCH[model]
    net = symbol_net(mx.sym, model)
    req = {n: ("null" if n in ("data", "softmax_label") else "write") for n in net.list_arguments()}
    ex = net.simple_bind(mx.cpu(), grad_req=req, data=(batch,) + SHAPE[model])
    rng = np.random.RandomState(0)
    for name, arr in ex.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.randint(0, 4 if model == "tiny" else 10, arr.shape)
        else:
            arr[:] = rng.normal(0, 0.05, arr.shape)

    def step():
        ex.forward(is_train=True)
        ex.backward()
    return time_steps(step, mx.nd.waitall, iters, repeats, batch, _CLOCK_NAME)


def run_torch(model, iters, repeats, threads):
    import torch  # noqa: PLC0415
    torch.set_num_threads(threads)
    nn = torch.nn
    batch = BATCH[model]
    if model == "tiny":
        net = nn.Sequential(*[m for _ in range(50) for m in (nn.Linear(4, 4), nn.ReLU())])
    elif model == "mlp":
        net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                            nn.Linear(512, 10))
    else:
        net = nn.Sequential(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2), nn.Conv2d(20, 50, 5), nn.Tanh(),
                            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))
    x = torch.randn((batch,) + SHAPE[model])
    y = torch.randint(0, 4 if model == "tiny" else 10, (batch,))
    loss_fn = nn.CrossEntropyLoss(reduction="sum")

    def step():
        for p in net.parameters():
            p.grad = None
        loss_fn(net(x), y).backward()
    return time_steps(step, lambda: None, iters, repeats, batch, _CLOCK_NAME)


def run_numpy_mlp(iters, repeats):
    """The MLP by hand: three GEMMs forward, five backward (no data gradient), ReLU masks, softmax."""
    import numpy as np  # noqa: PLC0415
    rng = np.random.default_rng(0)
    batch = BATCH["mlp"]
    x = rng.random((batch, 784), dtype=np.float32)
    ws = [rng.standard_normal(s, dtype=np.float32) * 0.05 for s in ((512, 784), (512, 512), (10, 512))]
    bs = [np.zeros(n, np.float32) for n in (512, 512, 10)]
    label = rng.integers(0, 10, batch)
    rows = np.arange(batch)

    def step():
        h1 = np.maximum(x @ ws[0].T + bs[0], 0)
        h2 = np.maximum(h1 @ ws[1].T + bs[1], 0)
        o = h2 @ ws[2].T + bs[2]
        o = np.exp(o - o.max(1, keepdims=True))
        o /= o.sum(1, keepdims=True)
        o[rows, label] -= 1
        grads = [o.T @ h2, o.sum(0)]
        g2 = (o @ ws[2]) * (h2 > 0)
        grads += [g2.T @ h1, g2.sum(0)]
        g1 = (g2 @ ws[1]) * (h1 > 0)
        grads += [g1.T @ x, g1.sum(0)]
        return grads
    return time_steps(step, lambda: None, iters, repeats, batch, _CLOCK_NAME)


def worker(args) -> None:
    global _CLOCK_NAME
    _CLOCK_NAME = args.clock
    if args.worker == "mxref":
        sys.path.insert(0, ROOT)
        import mxref as mx  # noqa: PLC0415
        rates = run_symbolic(mx, args.model, args.iters, args.repeats)
    elif args.worker == "mxnet":
        import mxnet as mx  # noqa: PLC0415
        rates = run_symbolic(mx, args.model, args.iters, args.repeats)
    elif args.worker == "torch":
        rates = run_torch(args.model, args.iters, args.repeats, args.threads)
    else:
        rates = run_numpy_mlp(args.iters, args.repeats)
    print(json.dumps(rates))


_CLOCK_NAME = "wall"


def measure(system, model, threads, iters, repeats, clock="wall"):
    return _measure(PYTHONS[system], __file__, system, model, threads, iters, repeats, clock)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["mlp", "lenet", "tiny"])
    add_timing_arguments(parser, PYTHONS, "iterations per timed block (default per model)")
    args = parser.parse_args(argv)
    if args.worker:
        args.iters = args.iters or ITERS[args.model]
        worker(args)
        return
    print(f"forward+backward samples/s ({args.clock} clock), {args.threads} thread(s), median of "
          f"{args.repeats} x {args.rounds} blocks")
    print(f"{'model':6} {'system':8} {'samples/s':>10} {'min':>8} {'max':>8} | mxref / system")
    for model in args.models:
        systems = ["mxref", "mxnet", "torch"] + (["numpy"] if model == "mlp" else [])
        rates = alternate(measure, systems, model, args, args.iters or ITERS[model])
        med = {s: statistics.median(r) for s, r in rates.items()}
        for s in systems:
            ratio = "" if s == "mxref" else f"{med['mxref'] / med[s]:.2f}x"
            print(f"{model:6} {s:8} {med[s]:10.0f} {min(rates[s]):8.0f} {max(rates[s]):8.0f} | {ratio}")


if __name__ == "__main__":
    main()
