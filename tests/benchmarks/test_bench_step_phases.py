"""benchmarks/bench_step_phases.py runs end to end on a tiny net and counts what it should."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_phases_ops_and_pairs_on_a_tiny_net():
    script = str(ROOT / "benchmarks" / "bench_step_phases.py")
    out = subprocess.run([sys.executable, script, "--model", "dense8", "--steps", "20", "--pairs", "2",
                          "--burn-us", "10"],
                         capture_output=True, text=True, timeout=120, check=True, cwd=ROOT).stdout
    ops = dict(re.findall(r"^  (module|hybrid|imperative) +(\d+):", out, re.M))
    # Module: data and label copied in, one forward and one backward segment, the six SGD updates
    # as two fused multi_sgd operations (MXNET_OPTIMIZER_AGGREGATION_SIZE=4); hybridized: no
    # copies, the loss forward and backward (the default head gradient is filled without an
    # operation); imperative: three FullyConnected, two Activation and the loss, their six backward
    # operations (writing the parameter gradients straight into .grad: no copies), two multi_sgd.
    assert ops == {"module": "6", "hybrid": "6", "imperative": "14"}
    assert "hybrid / module throughput" in out
    assert "module+burn / module throughput" in out
    for api in ("module", "hybrid", "imperative"):
        assert re.search(rf"^  {api} .*\| sum +[\d.]+$", out, re.M)
