"""Run MXNet 1.9.1's own unit tests against mxref and count, per file, how many of MXNet's passes mxref keeps.

The tests are MXNet's, unedited: ``tests/python/unittest/`` at tag 1.9.1 of apache/mxnet (their
``common.py`` imports ``nose``; install ``nose`` and ``pytest-timeout`` beside mxref). mxref is
imported under the name ``mxnet`` by ``mxnet_alias.py``; each test's outcome is written by
``mxnet_record.py``. The MXNet side is read from ``baseline_mxnet_1.9.1.json`` (made by this script
with ``--mxnet-python``, once, from MXNet 1.9.1 in its own virtualenv), so a run needs MXNet's
sources but not MXNet itself.

    # once: which tests pass under MXNet 1.9.1 on this machine's CPU
    python benchmarks/mxnet_unittests/run.py --tests ~/mxnet/tests/python/unittest \\
        --mxnet-python ~/mxnet-venv/bin/python --only-baseline
    # each time: the same files against mxref, the table in docs/compatibility.md
    python benchmarks/mxnet_unittests/run.py --tests ~/mxnet/tests/python/unittest --write-docs

A test counts for mxref when it passes under MXNet and under mxref. Tests listed in
``differences.py`` are where mxref deliberately differs from MXNet; they are counted on their own.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BASELINE = os.path.join(HERE, "baseline_mxnet_1.9.1.json")
DOC = os.path.join(ROOT, "docs", "compatibility.md")
BEGIN, END = "<!-- mxnet-unittests:begin -->", "<!-- mxnet-unittests:end -->"

sys.path.insert(0, HERE)
from differences import DIFFERENCES  # noqa: E402


def list_files(path: str = os.path.join(HERE, "files.txt")) -> List[str]:
    with open(path) as f:
        return [ln.split("#")[0].strip() for ln in f if ln.split("#")[0].strip()]


def run_file(python: str, tests_dir: str, name: str, alias: bool, mxref_root: str,
             per_test_timeout: int, file_timeout: int, keyword: str = None) -> Dict:
    """One pytest process over one test file; returns the recorder's JSON plus the run's status."""
    fd, record = tempfile.mkstemp(suffix=".json", prefix="mxnet-unittest-")
    os.close(fd)
    env = dict(os.environ)
    env["MXNET_UNITTEST_RECORD"] = record
    env["MXNET_HOME"] = tempfile.mkdtemp(prefix="mxnet-home-")     # no test reaches a real model store
    path = [HERE] + ([mxref_root] if alias else [])
    env["PYTHONPATH"] = os.pathsep.join(path + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [python, "-m", "pytest", "-q", "-p", "mxnet_record", "-p", "no:cacheprovider",
           "--continue-on-collection-errors", "--timeout", str(per_test_timeout), "-o", "addopts=",
           "--rootdir", tests_dir, name]
    if alias:
        cmd[3:3] = ["-p", "mxnet_alias"]
    if keyword:
        cmd += ["-k", keyword]
    start = time.time()
    try:
        proc = subprocess.run(cmd, cwd=tests_dir, env=env, capture_output=True, text=True,
                              timeout=file_timeout)
        status, tail = proc.returncode, proc.stdout[-2000:] + proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
        status, tail = "timeout", f"the whole file ran past {file_timeout} s"
    try:
        with open(record) as f:
            result = json.load(f)
    except (OSError, ValueError):
        result = {"tests": {}, "collect_errors": {name: f"no results (exit {status}): {tail[-300:]}"}}
    finally:
        os.unlink(record)
    result["status"], result["seconds"] = status, round(time.time() - start, 1)
    return result


def run_all(python: str, tests_dir: str, files: List[str], alias: bool, mxref_root: str, jobs: int,
            per_test_timeout: int, file_timeout: int, keyword: str = None) -> Dict[str, Dict]:
    out = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_file, python, tests_dir, f, alias, mxref_root, per_test_timeout,
                               file_timeout, keyword): f for f in files}
        for fut in concurrent.futures.as_completed(futures):
            name = futures[fut]
            out[name] = fut.result()
            passed = sum(v["outcome"] == "passed" for v in out[name]["tests"].values())
            print(f"  {name}: {passed} passed in {out[name]['seconds']} s", file=sys.stderr, flush=True)
    return out


def make_baseline(results: Dict[str, Dict]) -> Dict[str, Dict]:
    """Per file: MXNet's passing tests (the denominator) and how many it failed or skipped."""
    base = {}
    for name, res in sorted(results.items()):
        tests = res["tests"]
        base[name] = {"passed": sorted(t for t, v in tests.items() if v["outcome"] == "passed"),
                      "failed": sum(v["outcome"] == "failed" for v in tests.values()),
                      "skipped": sum(v["outcome"] == "skipped" for v in tests.values()),
                      "collect_errors": res["collect_errors"]}
    return base


def compare(baseline: Dict[str, Dict], results: Dict[str, Dict]) -> List[Dict]:
    """One row per file: MXNet's passes, mxref's share of them, the documented differences, the failures."""
    rows = []
    for name in results:
        expected = baseline[name]["passed"]
        got = results[name]["tests"]
        collect = results[name]["collect_errors"]
        passed, differ, failures = 0, [], []
        for test in expected:
            outcome = got.get(test)
            if outcome is not None and outcome["outcome"] == "passed":
                passed += 1
            elif test in DIFFERENCES:
                differ.append((test, DIFFERENCES[test]))
            else:
                if outcome is None:
                    why = next(iter(collect.values()), "not collected") if collect else "not collected"
                else:
                    why = outcome.get("reason", outcome["outcome"])
                failures.append((test, why))
        rows.append({"file": name, "mxnet": len(expected), "mxref": passed, "differ": differ,
                     "failures": failures, "collect_errors": collect})
    return rows


def table(rows: List[Dict]) -> str:
    lines = ["| file | pass under MXNet 1.9.1 | of those, pass under mxref | documented differences | % |",
             "|---|---:|---:|---:|---:|"]
    tot_m = tot_r = tot_d = 0
    for r in sorted(rows, key=lambda r: r["file"]):
        pct = 100.0 * r["mxref"] / r["mxnet"] if r["mxnet"] else 100.0
        lines.append(f"| `{r['file']}` | {r['mxnet']} | {r['mxref']} | {len(r['differ'])} | {pct:.0f}% |")
        tot_m, tot_r, tot_d = tot_m + r["mxnet"], tot_r + r["mxref"], tot_d + len(r["differ"])
    pct = 100.0 * tot_r / tot_m if tot_m else 100.0
    lines.append(f"| **all** | **{tot_m}** | **{tot_r}** | **{tot_d}** | **{pct:.1f}%** |")
    return "\n".join(lines)


def failure_list(rows: List[Dict]) -> str:
    out = []
    for r in sorted(rows, key=lambda r: r["file"]):
        if not r["failures"] and not r["differ"]:
            continue
        out.append(f"\n#### `{r['file']}`\n")
        for test, why in r["differ"]:
            out.append(f"- `{test.split('::', 1)[-1]}` — **differs on purpose**: {why}")
        for test, why in r["failures"]:
            why = why.replace("|", "\\|").replace("`", "'")
            out.append(f"- `{test.split('::', 1)[-1]}` — {why}")
    return "\n".join(out)


def write_docs(rows: List[Dict], note: str) -> None:
    with open(DOC) as f:
        text = f.read()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = (f"{BEGIN}\n{note}\n\n{table(rows)}\n\n"
            f"### Every test that passes under MXNet and not under mxref\n{failure_list(rows)}\n{END}")
    with open(DOC, "w") as f:
        f.write(head + body + tail)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tests", required=True, help="MXNet 1.9.1's tests/python/unittest folder")
    ap.add_argument("--files", nargs="*", help="test files (default: files.txt)")
    ap.add_argument("-k", dest="keyword", help="pytest -k expression, to run a part of the files")
    ap.add_argument("--mxnet-python", help="a Python with MXNet 1.9.1: (re)make the baseline with it")
    ap.add_argument("--only-baseline", action="store_true", help="make the baseline and stop")
    ap.add_argument("--mxref-root", default=ROOT, help="the checkout whose mxref is tested")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=180, help="seconds per test")
    ap.add_argument("--file-timeout", type=int, default=3600, help="seconds per file")
    ap.add_argument("--json", help="write the mxref results here")
    ap.add_argument("--write-docs", action="store_true", help="update the table in docs/compatibility.md")
    args = ap.parse_args(argv)
    tests_dir = os.path.abspath(os.path.expanduser(args.tests))
    files = args.files or list_files()

    if args.mxnet_python:
        print("MXNet 1.9.1:", file=sys.stderr)
        res = run_all(args.mxnet_python, tests_dir, files, False, args.mxref_root, args.jobs,
                      args.timeout, args.file_timeout, args.keyword)
        baseline = json.load(open(BASELINE)) if os.path.exists(BASELINE) else {}
        baseline.update(make_baseline(res))
        with open(BASELINE, "w") as f:
            json.dump(baseline, f, indent=1, sort_keys=True)
        if args.only_baseline:
            return 0
    with open(BASELINE) as f:
        baseline = json.load(f)
    missing = [f for f in files if f not in baseline]
    if missing:
        ap.error(f"no MXNet baseline for {missing}: run once with --mxnet-python")

    print("mxref:", file=sys.stderr)
    res = run_all(sys.executable, tests_dir, files, True, os.path.abspath(args.mxref_root), args.jobs,
                  args.timeout, args.file_timeout, args.keyword)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
    rows = compare(baseline, res)
    print(table(rows))
    if args.write_docs:
        commit = subprocess.run(["git", "-C", args.mxref_root, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        note = (f"Measured at commit `{commit}` with `python benchmarks/mxnet_unittests/run.py "
                f"--tests <mxnet-1.9.1>/tests/python/unittest --write-docs` "
                f"(per-test timeout {args.timeout} s).")
        write_docs(rows, note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
