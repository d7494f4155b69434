"""Every .cu kernel file compiles with the real CUDA compiler to cubins for sm_80 and sm_90, so code
the emulator accepts but nvcc rejects fails CI. Skipped where nvcc is not on the PATH.

real_t is float here (one nvcc run per file keeps CI time down); the double builds are compiled by
nvcc when the GPU suite runs on a real GPU (``benchmarks/gpu_check.sh``)."""
import concurrent.futures
import pathlib
import re
import shutil
import subprocess

import pytest

from mxref._ext.cuda.runtime import KERNEL_DIR

NVCC = shutil.which("nvcc")
SOURCES = sorted(KERNEL_DIR.glob("*.cu")) + [pathlib.Path(__file__).with_name("emu_probe.cu")]

pytestmark = [pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH"), pytest.mark.timeout(300)]


def _options(source: pathlib.Path, real: str):
    """``-Dreal_t=...``, or the options a file names for this check (``// nvcc check options: ...``)
    when its types are other macros (cast.cu's ``src_t``/``dst_t``)."""
    m = re.search(r"^// nvcc check options: (.*)$", source.read_text(), re.M)
    return m.group(1).split() if m else [f"-Dreal_t={real}"]


def _compile(source: pathlib.Path, real: str, tmp: pathlib.Path) -> str:
    # PyCUDA wraps a source in extern "C" (unmangled kernel names); the check compiles it the same way.
    wrapped = tmp / f"{source.stem}-{real}.cu"
    wrapped.write_text(f'extern "C" {{\n#include "{source}"\n}}\n')
    cmd = [NVCC, "-fatbin", "-gencode", "arch=compute_80,code=sm_80",
           "-gencode", "arch=compute_90,code=sm_90", *_options(source, real), f"-I{KERNEL_DIR}",
           "-o", str(tmp / f"{source.stem}-{real}.fatbin"), str(wrapped)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    return "" if proc.returncode == 0 else f"{source.name} (real_t={real}):\n{proc.stderr}"


def test_nvcc_compiles_every_kernel_file_for_sm80_and_sm90(tmp_path):
    jobs = [(s, "float") for s in SOURCES]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:      # nvcc spends much of its time waiting
        errors = [e for e in pool.map(lambda j: _compile(j[0], j[1], tmp_path), jobs) if e]
    assert not errors, "\n".join(errors)
