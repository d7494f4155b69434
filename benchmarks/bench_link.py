"""Per-message cost of the collective's MPI link against mpi4py's own ``Sendrecv``, under mpiexec.

    FI_TCP_IFACE=lo .venv/bin/mpiexec -launcher fork -iface lo -n 2 .venv/bin/python benchmarks/bench_link.py

Prints microseconds per call (median of 7 rounds of 300 calls, the three forms alternated in each
round, so machine drift hits them alike) for a raw ``comm.Sendrecv`` of the bytes, the same
exchange through ``MPILink.sendrecv``, and a whole two-rank ring allreduce over the link.
"""
import statistics
import time

import numpy as np
from mpi4py import MPI

from mxref import collective
from mxref.collective import algorithms
from mxref.collective.base import SUM, reducer


def main(rounds: int = 7, calls: int = 300) -> None:
    collective.init("mpi")
    eng = collective._engine()
    link, comm = eng.link, eng.comm
    if link.world_size != 2:
        raise SystemExit("run on exactly 2 ranks")
    peer, tag, fold = 1 - link.rank, link.tag_base, reducer(SUM, np.float32)
    results = {}
    for n in (1024, 8192, 16384, 262144):
        x, y, buf = np.zeros(n, np.float32), np.empty(n, np.float32), np.zeros(2 * n, np.float32)
        forms = {
            "mpi4py Sendrecv": lambda x=x, y=y: comm.Sendrecv(
                [x, MPI.BYTE], dest=peer, sendtag=tag, recvbuf=[y, MPI.BYTE], source=peer, recvtag=tag),
            "MPILink.sendrecv": lambda x=x, y=y: link.sendrecv(peer, x, peer, y),
            "ring allreduce (2x bytes)": lambda buf=buf: algorithms.ring_allreduce(link, buf, fold),
        }
        for _ in range(rounds):
            for name, fn in forms.items():
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                results.setdefault((4 * n, name), []).append((time.perf_counter() - t0) / calls * 1e6)
    if link.rank == 0:
        print(f"{'bytes':>8s}  {'form':28s} {'us per call':>12s}")  # bytes: of one message
        for (nbytes, name), times in results.items():
            print(f"{nbytes:8d}  {name:28s} {statistics.median(times):12.2f}")
    collective.finalize()


main()
