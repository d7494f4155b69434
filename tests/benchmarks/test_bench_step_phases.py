"""benchmarks/bench_step_phases.py runs end to end on a tiny net and counts what it should."""
import os
import pathlib
import re
import subprocess
import sys

import mxref as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_phases_ops_and_pairs_on_a_tiny_net():
    script = str(ROOT / "benchmarks" / "bench_step_phases.py")
    out = subprocess.run([sys.executable, script, "--model", "dense8", "--steps", "20", "--pairs", "2",
                          "--burn-us", "10", "--op-cpu"],
                         capture_output=True, text=True, timeout=120, check=True, cwd=ROOT).stdout
    counts, op_cpu = out.split("operation CPU per step")
    ops = dict(re.findall(r"^  (module|hybrid|imperative) +(\d+):", counts, re.M))
    # Module: data and label copied in, one forward and one backward segment, the six SGD updates
    # as two fused multi_sgd operations (MXNET_OPTIMIZER_AGGREGATION_SIZE=4); hybridized: no
    # copies, the loss forward and backward (the default head gradient is filled without an
    # operation); imperative: three FullyConnected, two Activation and the loss, their six backward
    # operations (the tuned backward writes the parameter gradients straight into .grad; the
    # plain one copies them: six more), two multi_sgd.
    imperative_ops = "20" if mx.nd.imperative.is_plain() else "14"
    assert ops == {"module": "6", "hybrid": "6", "imperative": imperative_ops}
    assert "hybrid / module throughput" in out
    assert "module+burn / module throughput" in out
    assert re.search(r"^  imperative +\d+: .*_backward_FullyConnected \d+", op_cpu, re.M)
    for api in ("module", "hybrid", "imperative"):
        assert re.search(rf"^  {api} .*\| sum +[\d.]+$", out, re.M)


def test_push_overlap_reports_both_intervals():
    """``--push-overlap`` times blocks at Python's 5 ms and mxref's switch interval, for imperative
    and hybridized Gluon, and counts the operations finished while the loop pushed."""
    script = str(ROOT / "benchmarks" / "bench_step_phases.py")
    env = dict(os.environ, MXREF_GIL_SWITCH_US="100")
    out = subprocess.run([sys.executable, script, "--model", "dense8", "--steps", "0", "--push-overlap", "1"],
                         capture_output=True, text=True, timeout=120, check=True, cwd=ROOT, env=env).stdout
    rows = re.findall(r"^  (imperative|hybrid) +interval +(5 ms|\d+ µs): pushed in +[\d.]+ ms, "
                      r"+(\d+) / (\d+) operations done by then", out, re.M)
    assert {(api, label[-2:]) for api, label, _, _ in rows} == {
        ("imperative", "ms"), ("imperative", "µs"), ("hybrid", "ms"), ("hybrid", "µs")}
    for _, _, during, total in rows:
        assert 0 <= int(during) <= int(total) and int(total) > 0
