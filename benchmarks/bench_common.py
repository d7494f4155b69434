"""Pieces shared by the throughput benchmarks: the timing loop, the clocks, the MLP/LeNet symbol
code and the launcher of one measuring subprocess. Standard library only: the MXNet and PyTorch
interpreters import it too (a script's own folder is first on ``sys.path``)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}


def time_steps(step, sync, iters, repeats, batch, clock="wall"):
    """Samples/s of ``repeats`` blocks of ``iters`` calls of ``step`` (after 3 warm-up calls)."""
    now = CLOCK[clock]
    for _ in range(3):
        step()
    sync()
    rates = []
    for _ in range(repeats):
        t0 = now()
        for _ in range(iters):
            step()
        sync()
        rates.append(batch * iters / (now() - t0))
    return rates


def symbol_net(sym, model):
    """The model as MXNet 1.x symbol code ending in ``SoftmaxOutput`` (``sym`` is ``mxnet.sym`` or
    ``mxref.sym``): ``mlp`` 784-512-512-10, ``lenet`` LeNet-5, ``tiny`` 50 x (FC(4) + ReLU)."""
    h = sym.Variable("data")
    if model == "tiny":
        for i in range(50):
            h = sym.Activation(sym.FullyConnected(h, num_hidden=4, name=f"fc{i}"), act_type="relu")
        return sym.SoftmaxOutput(h, name="softmax")
    if model == "mlp":
        for i, n in enumerate((512, 512)):
            h = sym.Activation(sym.FullyConnected(h, num_hidden=n, name=f"fc{i + 1}"), act_type="relu")
        return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=10, name="fc3"), name="softmax")
    for i, nf in enumerate((20, 50)):
        h = sym.Convolution(h, kernel=(5, 5), num_filter=nf, name=f"conv{i + 1}")
        h = sym.Activation(h, act_type="tanh")
        h = sym.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2))
    h = sym.Activation(sym.FullyConnected(sym.Flatten(h), num_hidden=500, name="fc1"), act_type="tanh")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=10, name="fc2"), name="softmax")


def measure(python, script, system, model, threads, iters, repeats, clock="wall"):
    """Run ``script --worker system`` under ``python`` at ``threads`` threads; its JSON rates."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), MXNET_CPU_WORKER_NTHREADS="1",
               MXNET_ENGINE_TYPE="ThreadedEnginePerDevice")
    cmd = [python, os.path.abspath(script), "--worker", system, "--model", model,
           "--threads", str(threads), "--iters", str(iters), "--repeats", str(repeats), "--clock", clock]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def add_timing_arguments(parser, workers, block_help="calls per timed block (default per model)"):
    """The options both throughput benchmarks take, and the hidden ``--worker``/``--model`` of the
    subprocess that does the measuring (``workers``: the systems it can run)."""
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=0, help=block_help)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1, help="alternate the systems this many times")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall",
                        help="'cpu' divides by the process's CPU time (all its threads): steadier than "
                             "wall time on a shared machine, fair only when no thread spins idle")
    parser.add_argument("--worker", choices=list(workers), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)


def alternate(measure_fn, systems, model, args, iters):
    """Each system's rates over ``args.rounds`` rounds, the systems taking turns within a round
    (so load changes on a shared machine hit them all alike); ``measure_fn`` is the script's
    ``measure(system, model, threads, iters, repeats, clock)``."""
    rates = {s: [] for s in systems}
    for _ in range(args.rounds):
        for s in systems:
            rates[s] += measure_fn(s, model, args.threads, iters, args.repeats, args.clock)
    return rates
