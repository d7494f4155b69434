"""Where a training step's framework overhead goes: the calling thread's CPU time per phase, and
the engine operations pushed per step, for Module, hybridized Gluon and imperative Gluon.

The step is ``bench_training``'s (same nets, batch, SGD with momentum). Phases: Module's
``forward``, ``backward`` and ``update``; Gluon's network call, loss call (both under
``autograd.record()``), ``loss.backward()`` and ``Trainer.step``. Each phase is timed with
``time.thread_time()`` (CPU time of the calling thread only: the kernels on the engine's workers
are not in it) over ``--steps`` steps, with a ``waitall`` every 20 steps as ``bench_training``
does, and the median is printed. Then the engine's ``push_sync`` is wrapped to count the
operations each step pushes, by name (``--op-cpu``: and the CPU time they take).

``--pairs N`` then runs whole steps of Module and of hybridized Gluon in this one process,
alternating blocks of 20 steps N times, and prints each one's median time per step and the
median over pairs of hybridized / Module throughput: a comparison that the machine's drifting
speed disturbs less than separate processes do. ``--burn-us B`` adds B µs of Python busy loop on
the calling thread to every Module step (a third system, ``module+burn``), which shows what the
calling thread's Python costs a step.

``--push-overlap N`` shows what the GIL's switch interval does: N times, for imperative and
hybridized Gluon, a block of 20 steps at Python's 5 ms interval and one at mxref's
(``MXREF_GIL_SWITCH_US``), alternated; per block, how long the loop took to push the 20 steps and
how many of the engine operations had finished by then (the rest ran after), medians.

Run::

    .venv/bin/python benchmarks/bench_step_phases.py                 # MLP, 2 operator threads
    .venv/bin/python benchmarks/bench_step_phases.py --model lenet --steps 200
    .venv/bin/python benchmarks/bench_step_phases.py --steps 0 --pairs 40 --burn-us 300
    MXNET_ENGINE_TYPE=NaiveEngine OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python benchmarks/bench_step_phases.py --steps 100 --op-cpu   # kernels' CPU
    ... --op-cpu --without-kernels Activation,_backward_Activation   # the same, numpy's relu
    .venv/bin/python benchmarks/bench_step_phases.py --steps 0 --push-overlap 6
"""
from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import bench_training as bt  # noqa: E402

import mxref as mx  # noqa: E402


def make_steps(model: str):
    """``{api: [(phase name, callable), ...]}``: each API's step cut into its phases."""
    x, y = bt._data(model)
    batch = bt.BATCH[model]
    mod = mx.mod.Module(bt._symbol(mx.sym, model), context=mx.cpu())
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", y.shape)])
    mod.init_params(initializer=mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params=dict(bt.SGD, rescale_grad=1.0 / batch))
    data_batch = mx.io.DataBatch(data=[mx.nd.array(x)], label=[mx.nd.array(y)])
    steps = {"module": [("forward", lambda: mod.forward(data_batch, is_train=True)),
                        ("backward", mod.backward), ("update", mod.update)]}
    for api in ("hybrid", "imperative"):
        net = bt.gluon_net(mx.gluon, model)
        net.initialize(mx.init.Xavier())
        if api == "hybrid":
            net.hybridize(static_alloc=True, static_shape=True)
        loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = mx.gluon.Trainer(net.collect_params(), "sgd", bt.SGD)
        data, label = mx.nd.array(x), mx.nd.array(y)
        state = {}

        def call(net=net, data=data, state=state):
            with mx.autograd.record():
                state["out"] = net(data)

        def loss(loss_fn=loss_fn, label=label, state=state):
            with mx.autograd.record():
                state["loss"] = loss_fn(state.pop("out"), label)

        steps[api] = [("net call", call), ("loss call", loss),
                      ("backward", lambda state=state: state.pop("loss").backward()),
                      ("Trainer.step", lambda trainer=trainer: trainer.step(batch))]
    return steps


def time_phases(phases, steps: int) -> dict:
    for _ in range(10):
        for _, fn in phases:
            fn()
    mx.nd.waitall()
    spent = {name: [] for name, _ in phases}
    for i in range(steps):
        for name, fn in phases:
            t = time.thread_time()
            fn()
            spent[name].append(time.thread_time() - t)
        if i % 20 == 19:
            mx.nd.waitall()
    mx.nd.waitall()
    return {name: statistics.median(v) * 1e6 for name, v in spent.items()}


def count_ops(phases, steps: int = 10, spent: Optional[collections.Counter] = None) -> collections.Counter:
    """Engine operations per step, by name; with ``spent``, also the CPU seconds per step each
    name's operations took on the thread that ran them (``time.thread_time``)."""
    eng = mx.engine.get()
    names: collections.Counter = collections.Counter()
    original = eng.push_sync

    def counting(fn, ctx, const_vars=(), mutable_vars=(), *args, **kwargs):
        name = kwargs.get("name") or (args[2] if len(args) > 2 else None) or getattr(fn, "__name__", "?")
        names[name] += 1
        if spent is not None:
            def timed(run_ctx, fn=fn, name=name):
                t = time.thread_time()
                try:
                    return fn(run_ctx)
                finally:
                    spent[name] += (time.thread_time() - t) / steps
            return original(timed, ctx, const_vars, mutable_vars, *args, **kwargs)
        return original(fn, ctx, const_vars, mutable_vars, *args, **kwargs)

    eng.push_sync = counting
    try:
        for _ in range(steps):
            for _, fn in phases:
                fn()
        mx.nd.waitall()
    finally:
        del eng.push_sync
    return collections.Counter({k: v / steps for k, v in names.items()})


def burned(step, seconds: float):
    def run():
        step()
        t = time.thread_time()
        while time.thread_time() - t < seconds:
            pass
    return run


def compare_pairs(steps: dict, pairs: int, burn_us: float, block: int = 20) -> None:
    whole = {api: (lambda phases=steps[api]: [fn() for _, fn in phases]) for api in ("module", "hybrid")}
    if burn_us:
        whole["module+burn"] = burned(whole["module"], burn_us * 1e-6)
    names = list(whole)
    for fn in whole.values():
        for _ in range(10):
            fn()
    mx.nd.waitall()
    per_step = {name: [] for name in names}
    for r in range(pairs):
        for name in (names if r % 2 == 0 else names[::-1]):
            t = time.perf_counter()
            for _ in range(block):
                whole[name]()
            mx.nd.waitall()
            per_step[name].append((time.perf_counter() - t) / block)
    print(f"one process, {pairs} alternated blocks of {block} steps: ms per step (median)")
    for name in names:
        print(f"  {name:12} {statistics.median(per_step[name]) * 1e3:7.3f}")
    for name in names[1:]:
        ratios = [m / h for m, h in zip(per_step["module"], per_step[name])]
        q1, _, q3 = statistics.quantiles(ratios, n=4)
        print(f"  {name} / module throughput, median of pairs: {statistics.median(ratios):.3f}x "
              f"(quartiles {q1:.3f}-{q3:.3f})")


def push_overlap(steps: dict, blocks: int, block: int = 20) -> None:
    """Operations finished while the loop pushed a block, at 5 ms and at mxref's switch interval."""
    eng, mine = mx.engine.get(), sys.getswitchinterval()
    original, done = eng.push_sync, []

    def recording(fn, ctx, const_vars=(), mutable_vars=(), *args, **kwargs):
        def timed(run_ctx, fn=fn):
            try:
                return fn(run_ctx)
            finally:
                done.append(time.perf_counter())
        return original(timed, ctx, const_vars, mutable_vars, *args, **kwargs)

    intervals = {"5 ms": 0.005, f"{mine * 1e6:.0f} µs": mine}
    seen = collections.defaultdict(list)
    eng.push_sync = recording
    try:
        for _ in range(blocks):
            for api in ("imperative", "hybrid"):
                step = steps[api]
                for label, interval in intervals.items():
                    sys.setswitchinterval(interval)
                    for _, fn in step:
                        fn()
                    mx.nd.waitall()
                    done.clear()
                    t0 = time.perf_counter()
                    for _ in range(block):
                        for _, fn in step:
                            fn()
                    pushed = time.perf_counter()
                    mx.nd.waitall()
                    end = time.perf_counter()
                    during = sum(1 for t in done if t <= pushed)
                    seen[api, label].append((pushed - t0, during, len(done), end - t0))
    finally:
        del eng.push_sync
        sys.setswitchinterval(mine)
    print(f"{blocks} alternated blocks of {block} steps: ms to push them, operations finished by "
          "then / all, ms to the end of the block (medians)")
    for (api, label), rows in seen.items():
        push, during, total, end = (statistics.median(col) for col in zip(*rows))
        print(f"  {api:10} interval {label:>7}: pushed in {push * 1e3:6.1f} ms, {during:5.0f} / "
              f"{total:.0f} operations done by then, block {end * 1e3:6.1f} ms")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp", choices=sorted(bt.BATCH))
    parser.add_argument("--steps", type=int, default=600, help="steps timed per phase (0: skip)")
    parser.add_argument("--pairs", type=int, default=0, help="alternated blocks, in-process comparison")
    parser.add_argument("--burn-us", type=float, default=0.0, help="Python busy loop added to Module's step")
    parser.add_argument("--op-cpu", action="store_true", help="also the CPU time of each engine operation")
    parser.add_argument("--push-overlap", type=int, default=0, metavar="N",
                        help="N blocks per GIL switch interval: operations finished while the loop pushed")
    parser.add_argument("--without-kernels", default="", metavar="OPS",
                        help="comma-separated ops whose 'cpu' fast kernels are dropped (a before run)")
    args = parser.parse_args(argv)
    for op in filter(None, args.without_kernels.split(",")):
        for kernel in mx.ops.registry.list_kernels(op, "cpu"):
            mx.ops.registry.unregister_kernel(kernel)
            print(f"without the fast kernel {kernel.name} of {op}: its numpy reference runs")
    steps = make_steps(args.model)
    if args.pairs:
        compare_pairs(steps, args.pairs, args.burn_us)
    if args.push_overlap:
        push_overlap(steps, args.push_overlap)
    if not args.steps:
        return
    print(f"{args.model}: calling-thread CPU per phase (µs, median of {args.steps} steps), "
          f"{mx.ops.parallel.NUM_THREADS} operator thread(s)")
    for api, phases in steps.items():
        spent = time_phases(phases, args.steps)
        total = sum(spent.values())
        print(f"  {api:10} " + "  ".join(f"{k} {v:6.1f}" for k, v in spent.items()) + f"  | sum {total:6.1f}")
    print("engine operations per step")
    for api, phases in steps.items():
        ops = count_ops(phases)
        detail = ", ".join(f"{k} {v:g}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1]))
        print(f"  {api:10} {sum(ops.values()):4g}: {detail}")
    if args.op_cpu:
        print("operation CPU per step (µs, on the thread that ran it; all of it with "
              "MXNET_ENGINE_TYPE=NaiveEngine OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)")
        for api, phases in steps.items():
            spent: collections.Counter = collections.Counter()
            count_ops(phases, 50, spent)
            detail = ", ".join(f"{k} {v * 1e6:.0f}" for k, v in spent.most_common())
            print(f"  {api:10} {sum(spent.values()) * 1e6:6.0f}: {detail}")


if __name__ == "__main__":
    main()
