"""Run the multi-process tests many times and report how often each fails (target: 0 in 200).

A test that counts lines in the merged stdout of several processes, or that races a process
exit, fails once in tens of runs: too rarely for one suite run to show it. This runs each chosen
test ``--runs`` times, each run its own ``pytest`` process under a hard timeout (a hang counts
as a failure), and prints per-test failure counts and rates. The default set is every test in a
file that starts processes through mpiexec or the robust launcher (``needs_mpi``,
``mpiexec(``, ``mxref.tools.launch``), found by scanning ``tests/``; name node ids or files to
check fewer.

    python benchmarks/flaky_check.py --runs 200
    python benchmarks/flaky_check.py --runs 20 tests/collective/test_collective_launch.py

Not collected by pytest (the file name does not start with ``test_``). Exits 1 if any run failed.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKERS = re.compile(r"needs_mpi|mpiexec\(|mxref\.tools\.launch|tools\.launch")


def multi_process_files() -> list[str]:
    """Test files that start several processes (mpiexec or the robust launcher)."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                  if MARKERS.search(p.read_text()))


def collect(targets: list[str]) -> list[str]:
    """The node ids pytest collects from ``targets``."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          *targets], cwd=ROOT, capture_output=True, text=True, timeout=600).stdout
    return [line for line in out.splitlines() if "::" in line and not line.startswith(" ")]


def run_once(node: str, timeout: float) -> tuple[str, float]:
    """``('pass' | 'fail' | 'skip' | 'timeout', seconds)`` for one run of ``node``."""
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", node],
                              cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start
    tail = (proc.stdout.strip().splitlines()[-1:] or [""])[0]
    if proc.returncode != 0:
        return "fail", time.monotonic() - start
    return ("skip" if " skipped" in tail and " passed" not in tail else "pass"), time.monotonic() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", help="test files or node ids (default: every multi-process test)")
    ap.add_argument("--runs", type=int, default=200, help="runs of each test (default 200)")
    ap.add_argument("--timeout", type=float, default=300, help="hard limit of one run, seconds (default 300)")
    ap.add_argument("-k", dest="keyword", default=None, help="only node ids containing this string")
    args = ap.parse_args(argv)
    nodes = collect(args.targets or multi_process_files())
    if args.keyword:
        nodes = [n for n in nodes if args.keyword in n]
    if not nodes:
        print("no tests collected", file=sys.stderr)
        return 2
    print(f"{len(nodes)} tests x {args.runs} runs, {args.timeout:g} s hard timeout each", flush=True)
    failed_any = False
    print(f"{'failed':>7} {'timeout':>7} {'runs':>5} {'rate':>7} {'s/run':>6}  test")
    for node in nodes:
        counts = {"pass": 0, "fail": 0, "skip": 0, "timeout": 0}
        seconds = 0.0
        for _ in range(args.runs):
            outcome, dt = run_once(node, args.timeout)
            counts[outcome] += 1
            seconds += dt
        bad = counts["fail"] + counts["timeout"]
        failed_any |= bad > 0
        note = "  (skipped)" if counts["skip"] == args.runs else ""
        print(f"{counts['fail']:>7} {counts['timeout']:>7} {args.runs:>5} {bad / args.runs:>7.2%} "
              f"{seconds / args.runs:>6.1f}  {node}{note}", flush=True)
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
