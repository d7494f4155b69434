"""Run under mpiexec: every allreduce algorithm through the mpi engine, against MPI's own Allreduce.

    mpiexec -launcher fork -iface lo -n 3 python tests/mpi_programs/collective_algorithms_check.py

For each algorithm forced by the table (and for the measured default table), with the agreement
check on (small buffers then travel inside the check's messages) and off: every op on several
dtypes and sizes (0, 1, W+1, 4099 elements) equals ``MPI.Allreduce`` byte for byte (small
integers: exact in any order); random float64 sums are close to MPI's and bitwise identical on
every rank. Then mismatched calls (counts on either side of an algorithm boundary, dtypes) raise
on every rank, naming the odd one out. Prints ``rank R OK`` per rank.
"""
import sys

import numpy as np
from mpi4py import MPI
from mpi_sweep import sweep_against_mpi
from report import report

from mxref import collective
from mxref.base import MXNetError

comm = MPI.COMM_WORLD
rank, world = comm.Get_rank(), comm.Get_size()
TABLES = ["doubling", "rabenseifner", "ring", "tree", None]     # None: the measured default


def sweep(table, check):
    collective.init("mpi", algorithm=table, check=check)
    sweep_against_mpi(comm, f"{table} check={check}")
    for n in (3, 1000, 70001):          # inexact sums: close to MPI's, the same bits everywhere
        x = np.random.default_rng(rank + n).standard_normal(n)
        want = np.empty_like(x)
        comm.Allreduce(x, want)
        collective.allreduce(x, "sum")
        np.testing.assert_allclose(x, want, rtol=1e-12, atol=1e-12)
        z = np.where(np.arange(n) % 2, 0.0, -0.0) if rank % 2 else np.zeros(n)
        collective.allreduce(z, "max")       # signed zeros: the operand order shows in the bits
        everyone = comm.allgather(x.tobytes() + z.tobytes())
        if any(b != everyone[0] for b in everyone):
            sys.exit(f"rank {rank} {table} check={check}: ranks disagree bitwise at n={n}")
    for shape in ((3, 5), (2, 3, 700)):  # shaped arrays, each signature's plan run three times
        for it in range(3):
            y = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + rank + it
            want = np.empty_like(y)
            comm.Allreduce(y, want)
            collective.allreduce(y, collective.SUM)
            if y.tobytes() != want.tobytes():
                sys.exit(f"rank {rank} {table} check={check}: shape {shape} call {it} differs from MPI")
    collective.finalize()


def mismatches():
    collective.init("mpi", algorithm="doubling:4096,ring")
    last = world - 1
    for mine, what in ((np.zeros(100 if rank == last else 10), "count"),        # both doubling
                       (np.zeros(10000 if rank == last else 10), "count"),      # ring vs doubling
                       (np.zeros(6, np.int32 if rank == 0 else np.int64), "dtype")):
        try:
            collective.allreduce(mine, "sum")
            sys.exit(f"rank {rank}: mismatched {what} was not detected")
        except MXNetError as exc:
            odd = 0 if what == "dtype" and world > 2 else last
            if what == "dtype" and world == 2:
                odd = 1
            assert f"ranks [{odd}] disagree" in str(exc), str(exc)
    a = np.full(5, rank + 1.0)          # the engine is still usable afterwards
    collective.allreduce(a, "sum")
    assert (a == world * (world + 1) / 2).all()
    for it in range(2):                 # a signature whose plan saw a mismatch, now agreed
        b = np.full(10, rank + it, np.float64)
        collective.allreduce(b, collective.SUM)
        assert (b == world * (world - 1) / 2 + world * it).all(), b
    try:                                # the fast path (an int op) names the odd rank too
        collective.allreduce(np.zeros(11 if rank == last else 10), collective.SUM)
        sys.exit(f"rank {rank}: mismatched count through an int op was not detected")
    except MXNetError as exc:
        assert f"ranks [{last}] disagree" in str(exc), str(exc)
    collective.finalize()


def persistent_cap():
    """Past the link's cap on persistent requests, new sizes exchange without them, alike."""
    collective.init("mpi")
    link = collective._engine().link
    link.MAX_PERSISTENT = 4
    for n in range(1, 12):
        x = np.arange(n, dtype=np.float64) * (rank + 1)
        want = np.empty_like(x)
        comm.Allreduce(x, want)
        for _ in range(2):
            y = x.copy()
            collective.allreduce(y, collective.SUM)
            assert y.tobytes() == want.tobytes(), (n, y, want)
    assert len(link._persistent) <= 4, len(link._persistent)
    collective.finalize()


def main():
    for table in TABLES:
        for check in (True, False):
            sweep(table, check)
    if world > 1:
        mismatches()
        persistent_cap()
    report(f"rank {rank} OK")


main()
