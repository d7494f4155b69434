"""A pytest plugin that writes each test's outcome, and each file's collection error, to a JSON file.

The file is named by ``MXNET_UNITTEST_RECORD``. A test passes when its setup, call and teardown
all pass; anything else (failed, error, skipped, xfailed) is written with its phase and a one-line
reason, so the runner can tell "not run" from "failed".
"""
import json
import os

_results = {}
_collect_errors = {}


def _reason(report) -> str:
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None and crash.message:
        # The exception's own first line: "AssertionError: ...", "MXNetError: ...".
        return crash.message.strip().splitlines()[0][:300]
    text = str(report.longrepr) if report.longrepr is not None else ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # The last "E   ..." line is the exception; fall back to the last line of the report.
    errors = [ln for ln in lines if ln.startswith("E ")]
    line = (errors[-1] if errors else (lines[-1] if lines else "")).strip()
    return line[:300]


def pytest_runtest_logreport(report):
    prev = _results.get(report.nodeid)
    if report.passed and report.when == "call" and not hasattr(report, "wasxfail"):
        if prev is None:
            _results[report.nodeid] = {"outcome": "passed"}
        return
    if report.passed:
        return
    if prev is not None and prev["outcome"] != "passed":
        return                   # keep the first thing that went wrong
    outcome = "skipped" if report.skipped else "failed"
    _results[report.nodeid] = {"outcome": outcome, "when": report.when, "reason": _reason(report)}


def pytest_collectreport(report):
    if report.failed:
        _collect_errors[report.nodeid] = _reason(report)


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("MXNET_UNITTEST_RECORD")
    if path:
        with open(path, "w") as f:
            json.dump({"tests": _results, "collect_errors": _collect_errors}, f, indent=1, sort_keys=True)
