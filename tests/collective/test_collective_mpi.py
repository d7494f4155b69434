"""The mpi engine under mpiexec at 1-5 processes, checked against MPI's own Allreduce and Bcast."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")

try:
    import mpi4py  # noqa: F401
    HAVE_MPI4PY = True
except ImportError:
    HAVE_MPI4PY = False

needs_mpi = pytest.mark.skipif(not (HAVE_MPI4PY and MPIEXEC), reason="needs mpi4py and mpiexec")


def mpirun(n, script, timeout=90, *args):
    """Run ``script`` on ``n`` loopback-only processes; return the completed process."""
    env = dict(os.environ, FI_TCP_IFACE="lo", PYTHONPATH=str(ROOT))
    cmd = [MPIEXEC, "-launcher", "fork", "-iface", "lo", "-n", str(n), sys.executable, str(script), *args]
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@needs_mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_ring_tree_and_broadcast_match_mpi(n):
    """Every op, dtype and odd size equals MPI.Allreduce byte for byte; mismatches name the ranks."""
    proc = mpirun(n, ROOT / "tests/dist/collective_mpi_check.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(re.findall(r"rank (\d+) OK", proc.stdout)) == [str(r) for r in range(n)]
