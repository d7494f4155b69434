"""Run under mpiexec: the mpi engine's ring and tree allreduce and broadcast against MPI's own.

    mpiexec -launcher fork -iface lo -n 4 python tests/mpi_programs/collective_mpi_check.py
Prints ``rank R OK`` per rank and exits non-zero on the first disagreement.
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
def main():
    for algo, mincount in (("ring", 0), ("tree", 1 << 40)):
        # The agreement check is exercised below; the sweep runs the bare algorithms (half the messages).
        collective.init("mpi", ring_mincount=mincount, check=False)
        assert collective.get_rank() == rank and collective.get_world_size() == world
        sweep_against_mpi(comm, algo)
        # Inexact float sums: close to MPI's and identical on every rank.
        x = np.random.default_rng(rank).standard_normal(10007)
        want = np.empty_like(x)
        comm.Allreduce(x, want)
        collective.allreduce(x, "sum")
        np.testing.assert_allclose(x, want, rtol=1e-12, atol=1e-12)
        everyone = comm.allgather(x.tobytes())
        assert all(b == everyone[0] for b in everyone), "ranks disagree bitwise"
        for root in range(world):
            b = np.arange(1000.0) * (rank + 1)
            ref = b.copy()
            comm.Bcast(ref, root=root)
            collective.broadcast(b, root)
            assert b.tobytes() == ref.tobytes()
            obj = collective.broadcast({"from": rank, "payload": list(range(rank))}, root)
            assert obj == {"from": root, "payload": list(range(root))}
        collective.finalize()
        collective.init("mpi", ring_mincount=mincount)
        if world > 1:   # bad input: errors that name the ranks, on every rank, no hang
            try:
                collective.allreduce(np.zeros(5 if rank == world - 1 else 6), "sum")
                sys.exit(f"rank {rank}: mismatched counts were not detected")
            except MXNetError as exc:
                assert f"ranks [{world - 1}] disagree" in str(exc), str(exc)
            try:
                collective.allreduce(np.zeros(6, np.int32 if rank == 0 else np.int64), "sum")
                sys.exit(f"rank {rank}: mismatched dtypes were not detected")
            except MXNetError as exc:
                assert "disagree" in str(exc) and "dtype=int32" in str(exc), str(exc)
        collective.finalize()
    report(f"rank {rank} OK")


main()
