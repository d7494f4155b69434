"""What the collective programs here share: every op on several dtypes and sizes through
``collective.allreduce``, compared byte for byte with ``MPI.Allreduce`` (small integers, exact in
any order of reduction)."""
import sys

import numpy as np
from mpi4py import MPI

from mxref import collective

MPI_OPS = {collective.SUM: MPI.SUM, collective.MAX: MPI.MAX, collective.MIN: MPI.MIN,
           collective.PROD: MPI.PROD, collective.BITOR: MPI.BOR}
DTYPES = ["float32", "float64", "int8", "int64", "uint32"]


def data(n, dtype, seed, r):
    rng = np.random.default_rng(seed * 100 + r)
    lo = -3 if np.dtype(dtype).kind in "if" else 0
    return rng.integers(lo, 4, n).astype(dtype)


def sweep_against_mpi(comm, label: str) -> None:
    """Every op, dtype and size (0, 1, W+1, 4099) on the initialised engine; exit on a difference."""
    rank, world = comm.Get_rank(), comm.Get_size()
    seed = 0
    for dtype in DTYPES:
        ops = [collective.SUM, collective.MAX, collective.MIN, collective.PROD]
        ops += [collective.BITOR] if np.dtype(dtype).kind in "iu" else []
        for op in ops:
            for n in (0, 1, world + 1, 4099):
                seed += 1
                mine = data(n, dtype, seed, rank)
                want = np.empty_like(mine)
                comm.Allreduce(mine, want, op=MPI_OPS[op])
                collective.allreduce(mine, op)
                if mine.tobytes() != want.tobytes():
                    sys.exit(f"rank {rank} {label}: {dtype} op={op} n={n} differs from MPI.Allreduce")
