"""The mpi engine under mpiexec at 1-5 processes, checked against MPI's own Allreduce and Bcast."""
import re
import sys

import pytest
from mpi_support import ROOT, loopback_env, mpiexec, needs_mpi, run_reporting


def mpirun(n, script, timeout=90, *args):
    """Run ``script`` on ``n`` loopback-only processes; return the completed process (its ranks'
    report lines in ``proc.reports``)."""
    return run_reporting([*mpiexec(n), sys.executable, str(script), *args], timeout, loopback_env())


@needs_mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_ring_tree_and_broadcast_match_mpi(n):
    """Every op, dtype and odd size equals MPI.Allreduce byte for byte; mismatches name the ranks."""
    proc = mpirun(n, ROOT / "tests/mpi_programs/collective_mpi_check.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(re.findall(r"rank (\d+) OK", proc.reports)) == [str(r) for r in range(n)]
