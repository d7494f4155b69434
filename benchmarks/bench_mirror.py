"""Mirroring (recompute in backward): ResNet-50 training memory and speed, per policy.

For each policy (no mirroring, ``budget`` — the default of ``MXNET_BACKWARD_DO_MIRROR=1`` —,
``sublinear``, ``cheap``, MXNet's rule ``mxnet``) it binds ResNet-50 v1 for training and reads
``Total N MB allocated`` at the memory batch (default 32 at 224x224), then times forward+backward
at a smaller speed configuration (default batch 4 at 112x112; recomputation costs the same
fraction of a step at any size). The speed executors are all bound first and timed round-robin,
``--repeats`` rounds, so load changes on a shared machine hit every policy alike; medians of wall
and CPU (``process_time``, all threads) seconds. It prints MB, time per step, both relative to no
mirroring, the training graph's operations (``count_flops``) relative to no mirroring (the
recomputation, free of timing noise), and whether the issue's target is met: memory at least 30%
lower at no less than 75% of the speed.

Run::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_mirror.py
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

POLICIES = ["none", "budget", "sublinear", "cheap", "mxnet"]


def _set_policy(policy: str) -> None:
    if policy == "none":
        os.environ["MXNET_BACKWARD_DO_MIRROR"] = "0"
    else:
        os.environ["MXNET_BACKWARD_DO_MIRROR"] = "1"
        os.environ["MXREF_MIRROR_POLICY"] = policy


def _bind(mx, sym, batch, image):
    return sym.simple_bind(mx.cpu(), grad_req={n: ("null" if n in ("data", "softmax_label") else "write")
                                               for n in sym.list_arguments()},
                           data=(batch, 3, image, image), softmax_label=(batch,))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mem-batch", type=int, default=32)
    p.add_argument("--mem-image", type=int, default=224)
    p.add_argument("--speed-batch", type=int, default=4)
    p.add_argument("--speed-image", type=int, default=112)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--policies", nargs="+", default=POLICIES, choices=POLICIES)
    args = p.parse_args(argv)
    args.policies = ["none"] + [q for q in args.policies if q != "none"]   # the baseline first

    import numpy as np  # noqa: PLC0415
    from bench_memory_planning import resnet50  # noqa: PLC0415 - plain MXNet-1.x symbol code

    import mxref as mx  # noqa: PLC0415
    from mxref.graph import apply_pass  # noqa: PLC0415

    sym = resnet50(mx)
    mbs, flops = {}, {}
    for policy in args.policies:
        _set_policy(policy)
        ex = _bind(mx, sym, args.mem_batch, args.mem_image)
        mbs[policy] = int(re.search(r"Total (\d+) MB allocated", ex.debug_str()).group(1))
        flops[policy] = apply_pass(ex._plan.graph, "count_flops").attrs["total_flops"]
        del ex
        print(f"  measured {policy}: {mbs[policy]} MB", file=sys.stderr)
    exs = {}
    for policy in args.policies:
        _set_policy(policy)
        ex = exs[policy] = _bind(mx, sym, args.speed_batch, args.speed_image)
        rng = np.random.RandomState(0)
        for name, arr in ex.arg_dict.items():
            if name != "softmax_label":
                arr[:] = rng.uniform(-0.05, 0.05, arr.shape)
        ex.forward(is_train=True)
        ex.backward()
        mx.nd.waitall()                       # warm-up: first use allocates
    wall = {p: [] for p in args.policies}
    cpu = {p: [] for p in args.policies}
    for _ in range(args.repeats):
        for policy, ex in exs.items():
            t, c = time.perf_counter(), time.process_time()
            ex.forward(is_train=True)
            ex.backward()
            mx.nd.waitall()
            wall[policy].append(time.perf_counter() - t)
            cpu[policy].append(time.process_time() - c)

    base = args.policies[0]
    med = lambda d, p: statistics.median(d[p])
    print(f"ResNet-50 v1 training: memory at batch {args.mem_batch}x3x{args.mem_image}^2, "
          f"speed at batch {args.speed_batch}x3x{args.speed_image}^2 (median of {args.repeats}, "
          f"round-robin; load average {os.getloadavg()[0]:.1f})")
    print("| policy | MB allocated | vs none | s / step | speed vs none | CPU s / step | CPU speed vs none "
          "| FLOPs vs none | target |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for policy in args.policies:
        change, speed = mbs[policy] / mbs[base] - 1, med(wall, base) / med(wall, policy)
        cpu_speed = med(cpu, base) / med(cpu, policy)
        met = "yes" if change <= -0.30 and speed >= 0.75 else "no"
        print(f"| {policy} | {mbs[policy]} | {change:+.1%} | {med(wall, policy):.3f} | {speed:.2f}x "
              f"| {med(cpu, policy):.3f} | {cpu_speed:.2f}x | {flops[policy] / flops[base]:.3f} "
              f"| {'–' if policy == base else met} |")


if __name__ == "__main__":
    main()
