"""Mirroring (recompute in backward): ResNet-50 training memory and speed, per policy.

For each policy (no mirroring, ``sublinear``, ``cheap``, MXNet's rule ``mxnet``) it binds
ResNet-50 v1 for training and reads ``Total N MB allocated`` at the memory batch (default 32 at
224x224), then times forward+backward at a smaller speed configuration (default batch 4 at
112x112; recomputation costs the same fraction of a step at any size), medians of ``--repeats``.
It prints MB, time per step, and both relative to no mirroring. The issue's target: memory at
least 30% lower at no less than 75% of the speed.

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

POLICIES = ["none", "sublinear", "cheap", "mxnet"]


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

    import numpy as np  # noqa: PLC0415
    from bench_memory_planning import resnet50  # noqa: PLC0415 - plain MXNet-1.x symbol code

    import mxref as mx  # noqa: PLC0415

    sym = resnet50(mx)
    rows = []
    for policy in args.policies:
        _set_policy(policy)
        ex = _bind(mx, sym, args.mem_batch, args.mem_image)
        mb = int(re.search(r"Total (\d+) MB allocated", ex.debug_str()).group(1))
        del ex
        ex = _bind(mx, sym, args.speed_batch, args.speed_image)
        rng = np.random.RandomState(0)
        for name, arr in ex.arg_dict.items():
            if name != "softmax_label":
                arr[:] = rng.uniform(-0.05, 0.05, arr.shape)
        ex.forward(is_train=True)
        ex.backward()
        mx.nd.waitall()                       # warm-up: first use allocates
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            ex.forward(is_train=True)
            ex.backward()
            mx.nd.waitall()
            times.append(time.perf_counter() - t)
        rows.append((policy, mb, statistics.median(times)))
        del ex
        print(f"  measured {policy}: {mb} MB, {rows[-1][2]:.3f} s/step", file=sys.stderr)

    base_mb, base_t = rows[0][1], rows[0][2]
    print(f"ResNet-50 v1 training: memory at batch {args.mem_batch}x3x{args.mem_image}^2, "
          f"speed at batch {args.speed_batch}x3x{args.speed_image}^2 (median of {args.repeats})")
    print("| policy | MB allocated | vs none | s / step | speed vs none |")
    print("|---|---:|---:|---:|---:|")
    for policy, mb, t in rows:
        print(f"| {policy} | {mb} | {mb / base_mb - 1:+.1%} | {t:.3f} | {base_t / t:.2f}x |")


if __name__ == "__main__":
    main()
