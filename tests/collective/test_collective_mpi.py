"""The mpi engine under mpiexec at 1-5 processes, every allreduce algorithm checked against MPI's own
Allreduce and Bcast."""
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


@needs_mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_every_algorithm_and_the_fused_check_match_mpi(n):
    """Recursive doubling, Rabenseifner, ring, tree and the measured table, with the agreement
    check carrying small buffers (MPI accepts shorter messages) and without it: byte-equal to
    MPI.Allreduce, the same bits on every rank, mismatches named on every rank."""
    proc = mpirun(n, ROOT / "tests/mpi_programs/collective_algorithms_check.py", 240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(re.findall(r"rank (\d+) OK", proc.reports)) == [str(r) for r in range(n)]


@needs_mpi
@pytest.mark.parametrize("n, waiting", [(2, "1"), (4, "0"), (3, "1")])
def test_both_ways_of_waiting_reduce_alike(n, waiting):
    """The link waits by testing and yielding the core (MXREF_COLLECTIVE_YIELD=1, the default
    with more ranks than cores) or in MPI's blocking calls (0): the same results, mismatches
    named, either way."""
    cmd = [*mpiexec(n), sys.executable, str(ROOT / "tests/mpi_programs/collective_algorithms_check.py")]
    proc = run_reporting(cmd, 240, loopback_env(MXREF_COLLECTIVE_YIELD=waiting))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(re.findall(r"rank (\d+) OK", proc.reports)) == [str(r) for r in range(n)]
