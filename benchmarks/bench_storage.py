"""Storage pool speed: alloc+free µs for the pure and Cython bookkeeping against plain ``np.empty``.

Run: ``.venv/bin/python benchmarks/bench_storage.py`` (a few seconds). PyTorch's CPU allocator is
timed too when ``/work/venvs/torch213`` (or ``--torch PYTHON``) exists. Prints medians and ratios.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from mxref.context import cpu  # noqa: E402
from mxref.storage.bookkeeping import PoolCore  # noqa: E402
from mxref.storage.device import CPUDevice  # noqa: E402
from mxref.storage.pool import PooledStorageManager  # noqa: E402
from mxref.storage.strategy import NaiveStrategy  # noqa: E402

# 64 MiB is above glibc's largest mmap threshold: every np.empty of it is a fresh mmap whose
# pages fault in on first touch, which a pool avoids by handing back warm pages.
SMALL, LARGE = 1024, 64 << 20
TORCH_SNIPPET = """
import statistics, timeit, torch
torch.set_num_threads(1)
def small(): torch.empty({small}, dtype=torch.uint8)
def large(): torch.empty({large}, dtype=torch.uint8).fill_(1)
for name, fn, n in (("small", small, 20000), ("large", large, 10)):
    print(name, statistics.median(timeit.repeat(fn, number=n, repeat=7)) / n * 1e6)
"""


def per_call_us(fn, number: int) -> float:
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def pool_fns(core_cls):
    pool = PooledStorageManager(cpu(), CPUDevice(), NaiveStrategy(), 5, core_cls)

    def small():
        pool.free(pool.alloc(SMALL))

    def large():
        h = pool.alloc(LARGE)
        h.buffer.fill(1)
        pool.free(h)

    core = pool._core

    def bookkeeping():
        key = core.bucket(SMALL)
        block = core.take(key)
        if block is None:
            block = object()
            core.track_new(key)
        core.give(key, block)

    return small, large, bookkeeping


def torch_times(python: str) -> dict:
    if not os.path.exists(python):
        return {}
    out = subprocess.run([python, "-c", TORCH_SNIPPET.format(small=SMALL, large=LARGE)],
                         capture_output=True, text=True, timeout=120)
    return {line.split()[0]: float(line.split()[1]) for line in out.stdout.splitlines() if line.strip()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--torch", default="/work/venvs/torch213/bin/python")
    args = parser.parse_args()

    rows = {}
    rows["np.empty"] = (per_call_us(lambda: np.empty(SMALL, np.uint8), 20000),
                        per_call_us(lambda: np.empty(LARGE, np.uint8).fill(1), 10), None)
    small, large, book = pool_fns(PoolCore)
    rows["pool, pure bookkeeping"] = (per_call_us(small, 20000), per_call_us(large, 10),
                                      per_call_us(book, 50000))
    try:
        from mxref._ext.storage_core import PoolCore as CythonCore
    except ImportError:
        print("(Cython storage_core not built: run `python setup.py build_ext --inplace`)")
    else:
        small, large, book = pool_fns(CythonCore)
        rows["pool, Cython bookkeeping"] = (per_call_us(small, 20000), per_call_us(large, 10),
                                            per_call_us(book, 50000))
    t = torch_times(args.torch)
    if t:
        rows["torch.empty (2.x CPU)"] = (t["small"], t["large"], None)

    base_small, base_large = rows["np.empty"][:2]
    print(f"{'µs per alloc+free':<28}{'1 KiB':>10}{'vs np':>8}{'64 MiB+fill':>13}{'vs np':>8}"
          f"{'bookkeeping':>13}")
    for name, (s, lg, b) in rows.items():
        book_txt = f"{b:>13.3f}" if b is not None else f"{'-':>13}"
        print(f"{name:<28}{s:>10.3f}{s / base_small:>7.2f}x{lg:>13.1f}{lg / base_large:>7.2f}x{book_txt}")
    if "pool, Cython bookkeeping" in rows:
        pure, fast = rows["pool, pure bookkeeping"], rows["pool, Cython bookkeeping"]
        print(f"Cython/pure: bookkeeping {pure[2] / fast[2]:.2f}x faster, "
              f"whole alloc+free {pure[0] / fast[0]:.2f}x faster")


if __name__ == "__main__":
    main()
