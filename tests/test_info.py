"""mxref.info(): versions, fast-path choices with reasons, engine and storage descriptions."""
import io
import os
import subprocess
import sys

import mxref as mx


def test_info_reports_versions_engine_and_storage():
    buf = io.StringIO()
    report = mx.info(file=buf)
    text = buf.getvalue()
    assert report["mxref"] == mx.__version__
    assert report["engine.type"] == mx.engine.engine_type()
    assert any(k.startswith("storage.cpu(0)") for k in report)
    assert "engine.type" in text and report["gpus"] == 0
    assert report["operator threads"] == mx.ops.parallel.NUM_THREADS
    assert report["blas"].startswith(("OpenBLAS", "not a controllable"))


def test_info_says_why_pure_python_is_used():
    """With MXREF_ENABLE_EXT=0 every extension row names the flag as the reason."""
    env = dict(os.environ, MXREF_ENABLE_EXT="0")
    env.pop("MXREF_ENFORCE_EXT", None)   # the two flags together are a (tested) configuration error
    out = subprocess.run([sys.executable, "-c", "import mxref; mxref.info()"], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    ext_rows = [line for line in out.splitlines() if line.startswith("ext.")]
    assert ext_rows, out
    assert all("python (MXREF_ENABLE_EXT=0)" in line for line in ext_rows), out
    assert "env.MXREF_ENABLE_EXT" in out
    assert any(line.startswith("kernels") and "reference only (MXREF_ENABLE_EXT=0)" in line
               for line in out.splitlines()), out


def test_info_lists_every_fast_kernel_and_whether_it_runs():
    """One row per registered kernel; a reference_kernels() block marks the host ones inactive."""
    from mxref._ext import reference_kernels
    from mxref.ops import registry
    kernels = registry.list_kernels()
    report = mx.info(file=io.StringIO())
    for k in kernels:
        assert report[f"kernel.{k.device}.{k.op}"].startswith(k.name)
    with reference_kernels():
        report = mx.info(file=io.StringIO())
    assert report["kernels"] == "reference only (reference_kernels())"
    assert all("inactive" in report[f"kernel.cpu.{k.op}"] for k in kernels if k.device == "cpu")
