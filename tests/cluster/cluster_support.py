"""What the cluster tests share: the skip marker, and the tests' own names and addresses."""
import pytest
from mpi_support import HAVE_MPI

from mxref.tools import netns

# Apart from a user's cluster (mxref-, 10.77.0.0/24) and the experiments' (mxexp-, 10.77.100.0/24).
PREFIX, SUBNET = "mxtest-", "10.78.9.0/24"

WHY_NOT = netns.missing_privileges() or (None if HAVE_MPI else "needs mpi4py and mpiexec")
needs_cluster = pytest.mark.skipif(WHY_NOT is not None, reason=f"cluster tests: {WHY_NOT}")
