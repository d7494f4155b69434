"""Fused multi-tensor SGD updates: engine operations per ``Trainer.step`` and its time, with the
optimizer's aggregation on (``MXNET_OPTIMIZER_AGGREGATION_SIZE``, default 4) and off (size 1).

The model has many small parameters (``--params`` Dense layers of ``--units`` x ``--units``, no
bias: 100 weights of 64x64 by default), the optimizer is SGD with momentum. Both trainers live in
one process (the size is read when the optimizer is made) and are timed in alternating rounds, so
the machine's drifting speed disturbs the ratio less; each round times ``--steps`` calls of
``trainer.step`` followed by one ``waitall``, and the median over ``--rounds`` rounds is printed
per step. The gradients are filled once by a backward pass (every step reuses them). For mxref the
engine's ``push_sync``/``push_async`` are then wrapped to count the operations one step pushes,
by name.

``--framework mxnet`` runs the same under MXNet 1.9.1 (no operation count there), for the
side-by-side::

    .venv/bin/python benchmarks/bench_fused_update.py
    /work/venvs/mxnet191/bin/python benchmarks/bench_fused_update.py --framework mxnet
"""
from __future__ import annotations

import argparse
import collections
import importlib
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def make_trainer(mx, size: int, n_params: int, units: int):
    """A net of ``n_params`` bias-free Dense layers and its SGD trainer, made with aggregation ``size``."""
    os.environ["MXNET_OPTIMIZER_AGGREGATION_SIZE"] = str(size)
    mx.random.seed(0)
    net = mx.gluon.nn.Sequential()
    for _ in range(n_params):
        net.add(mx.gluon.nn.Dense(units, in_units=units, use_bias=False))
    net.initialize(mx.init.Uniform(0.05))
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd",
                               {"learning_rate": 1e-3, "momentum": 0.9, "wd": 1e-4})
    x = mx.nd.ones((8, units))
    with mx.autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainer.step(8)             # makes the states (momentum) before anything is timed
    mx.nd.waitall()
    return trainer


def time_round(mx, trainer, steps: int) -> float:
    """Seconds per step over ``steps`` steps and one final wait. MXNet skips a parameter whose
    gradient no backward refreshed since the last step, so its flags are set again between steps,
    outside the timed spans (mxref keeps no such flag)."""
    arrays = [d for p in trainer._params for d in p.list_data()] if mx.__name__ == "mxnet" else []
    spent = 0.0
    for _ in range(steps):
        for d in arrays:
            d._fresh_grad = True
        t0 = time.perf_counter()
        trainer.step(8)
        spent += time.perf_counter() - t0
    t0 = time.perf_counter()
    mx.nd.waitall()
    return (spent + time.perf_counter() - t0) / steps


def count_ops(mx, trainer) -> collections.Counter:
    """The engine operations one ``trainer.step`` pushes (mxref only), by name."""
    from mxref import engine
    eng, counts = engine.get(), collections.Counter()

    def wrap(push):
        def counted(*args, **kwargs):      # (fn, ctx, const, mutable, prop, priority, name)
            counts[kwargs["name"] if "name" in kwargs else args[6] if len(args) > 6 else None] += 1
            return push(*args, **kwargs)
        return counted
    eng.push_sync, eng.push_async = wrap(eng.push_sync), wrap(eng.push_async)
    try:
        trainer.step(8)
        mx.nd.waitall()
    finally:
        del eng.push_sync, eng.push_async
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--framework", choices=("mxref", "mxnet"), default="mxref")
    ap.add_argument("--params", type=int, default=100, help="number of weights (default 100)")
    ap.add_argument("--units", type=int, default=64, help="each weight is units x units (default 64)")
    ap.add_argument("--steps", type=int, default=20, help="steps per timed round (default 20)")
    ap.add_argument("--rounds", type=int, default=15, help="alternating rounds (default 15)")
    args = ap.parse_args()
    mx = importlib.import_module(args.framework)
    sizes = {"aggregated (size 4)": 4, "one by one (size 1)": 1}
    trainers = {label: make_trainer(mx, size, args.params, args.units) for label, size in sizes.items()}
    times = {label: [] for label in sizes}
    for _ in range(args.rounds):
        for label, trainer in trainers.items():
            times[label].append(time_round(mx, trainer, args.steps))
    print(f"{args.framework}: Trainer.step, SGD momentum, {args.params} weights of "
          f"{args.units}x{args.units}, median of {args.rounds} rounds of {args.steps} steps")
    medians = {label: statistics.median(t) for label, t in times.items()}
    for label, trainer in trainers.items():
        ops = ""
        if args.framework == "mxref":
            counts = count_ops(mx, trainer)
            ops = f"   {sum(counts.values()):4d} engine ops/step  {dict(counts)}"
        print(f"  {label:22s} {medians[label] * 1e3:8.3f} ms/step{ops}")
    agg, one = medians["aggregated (size 4)"], medians["one by one (size 1)"]
    pairs = zip(times["aggregated (size 4)"], times["one by one (size 1)"])
    paired = statistics.median(b / a for a, b in pairs)
    print(f"  speedup of aggregation: {one / agg:.2f}x (medians), {paired:.2f}x (median of paired rounds)")


if __name__ == "__main__":
    main()
