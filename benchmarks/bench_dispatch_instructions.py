"""Instructions per imperative call (``c = a + b``, ``a += 1``), counted by valgrind: no noise.

A shared two-core machine moves wall-clock times by 30% from one minute to the next, more than
most changes to the dispatch are worth. The number of instructions a call executes does not move:
valgrind's callgrind counts them. Each case runs twice in a fresh interpreter under callgrind,
with ``--small`` and ``--large`` calls; the difference divided by the difference of the counts is
the cost of one call, import and start-up cancelled out::

    .venv/bin/python benchmarks/bench_dispatch_instructions.py [--before TREE] [--modes compiled python]

``--before TREE`` counts another checkout of mxref the same way, for a before/after table.
Instructions are not time (a cache miss or a branch mispredict costs more than an add), but on
one machine a change that removes 10% of them takes about 10% off the call; the wall-clock
benchmarks (``bench_dispatch.py``) remain the measure the targets are checked with.
Needs ``valgrind`` on PATH; without it the script says so and exits 0.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)

# The workload: N calls of one case on the default (threaded) engine, then a wait.
WORKLOAD = """
import sys
import mxref as mx
case, n = sys.argv[1], int(sys.argv[2])
a, b = mx.nd.ones((10,)), mx.nd.ones((10,))
c = a + b
a += 1
c.wait_to_read()
if case == "add":
    for _ in range(n):
        c = a + b
else:
    for _ in range(n):
        a += 1
mx.nd.waitall()
"""

CASES = {"add": "c = a + b", "iadd": "a += 1"}
MODES = {"compiled": {}, "python": {"MXREF_ENABLE_EXT": "0"}}


def count(tree: str, case: str, n: int, env_extra: dict) -> int:
    """Instructions callgrind counts for ``n`` calls of ``case`` with mxref from ``tree``."""
    env = dict(os.environ, PYTHONPATH=tree, **env_extra)
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, "-c", WORKLOAD, case, str(n)],
                          env=env, capture_output=True, text=True, timeout=1800, cwd=tree)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind run failed ({tree}, {case}, {n}):\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def per_call(tree: str, case: str, small: int, large: int, env_extra: dict) -> float:
    return (count(tree, case, large, env_extra) - count(tree, case, small, env_extra)) / (large - small)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="another checkout of mxref, counted the same way")
    ap.add_argument("--small", type=int, default=20000)
    ap.add_argument("--large", type=int, default=70000)
    ap.add_argument("--modes", nargs="+", default=["compiled"], choices=sorted(MODES))
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing counted (apt install valgrind)")
        return
    trees = [("this tree", TREE)] + ([("before", os.path.abspath(args.before))] if args.before else [])
    print(f"instructions per call: (count at {args.large} calls - count at {args.small}) / "
          f"{args.large - args.small}, callgrind\n")
    header = "| case | mode | " + " | ".join(name for name, _ in trees)
    header += " | this / before |" if args.before else " |"
    print(header)
    print("|---|---|" + "---:|" * (len(trees) + (1 if args.before else 0)))
    for case, text in CASES.items():
        for mode in args.modes:
            values = [per_call(tree, case, args.small, args.large, MODES[mode]) for _, tree in trees]
            row = f"| `{text}` | {mode} | " + " | ".join(f"{v:,.0f}" for v in values)
            row += f" | {values[0] / values[1]:.2f} |" if args.before else " |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
