"""Seeded fuzzing of the file loaders (``benchmarks/fuzz_loaders.py``, a small fixed set).

Mutated copies of MXNet-written ``.params``, ``-symbol.json`` and ``.rec`` files, and of an
optimizer-state file, may load or raise ``MXNetError``; nothing else (no bare ``ValueError``, no
``MemoryError``). The script runs in a subprocess that caps its own address space, so a loader
allocating from an unchecked size fails here instead of succeeding lazily. Replay one variant with
``python benchmarks/fuzz_loaders.py --only FORMAT:SEED``.
"""
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "fuzz_loaders.py"


def _run(*args):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env)


def test_mutated_files_load_or_raise_mxneterror_under_a_memory_limit():
    """100 seeded variants per format (params, symbol, rec, states): success or MXNetError only."""
    proc = _run("--variants", "100", "--seed", "0", "--json")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["bad"] == [], "\n".join(report["bad"])
    for fmt, counts in report["counts"].items():
        # Not vacuous: some variants of each format still load, others are refused.
        assert counts.get("ok", 0) > 0 and counts.get("MXNetError", 0) > 0, (fmt, counts)
        assert sum(counts.values()) == 100


def test_the_address_space_limit_turns_a_huge_allocation_into_memoryerror():
    """The harness's limit is real: under it a 4 GiB allocation fails at once."""
    code = ("import sys; sys.path.insert(0, 'benchmarks'); import fuzz_loaders as f; import numpy as np\n"
            "f.limit_address_space(256)\n"
            "try:\n    np.ones(1 << 32, np.uint8)\nexcept MemoryError:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=ROOT).stdout
    assert out.strip() == "refused"
