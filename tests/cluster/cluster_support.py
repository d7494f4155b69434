"""What the cluster tests share: the skip marker, and names and addresses of their own.

The names carry this pytest process's id (``mxt<pid % 1000>-h0``, subnets ``10.78.<5k..5k+4>.0/24``)
so that two test sessions on one machine (several checkouts tested at once, as root) do not
collide, and none collides with a user's cluster (``mxref-``, 10.77.0.0/24) or the experiments'
(``mxexp-``, 10.77.100.0/24). A session killed before its ``down`` leaves names that
``python -m mxref.tools.cluster down --prefix mxtNNN-`` removes.
"""
import os

import pytest
from mpi_support import HAVE_MPI

from mxref.tools import netns

TAG = f"{os.getpid() % 1000:03d}"
PREFIX = f"mxt{TAG}-"


def prefix(kind: str) -> str:
    """A second prefix for a test that makes a cluster of its own (``kind``: one letter)."""
    return f"mxt{TAG}{kind}-"


def subnet(i: int) -> str:
    """The i-th (0..4) subnet of this session."""
    return f"10.78.{os.getpid() % 50 * 5 + i}.0/24"


SUBNET = subnet(0)

WHY_NOT = netns.missing_privileges() or (None if HAVE_MPI else "needs mpi4py and mpiexec")
needs_cluster = pytest.mark.skipif(WHY_NOT is not None, reason=f"cluster tests: {WHY_NOT}")
