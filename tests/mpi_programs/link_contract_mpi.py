"""Run under ``mpiexec -n 2``: ``MPILink`` keeps the Link contract (tests/collective/link_contract.py).

Each rank writes ``OK`` (or the error) to ``<out dir>/rank<R>``.
"""
import sys
import traceback
from pathlib import Path

from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collective"))
from link_contract import check_link  # noqa: E402

from mxref.collective.mpi_engine import MPILink  # noqa: E402

comm = MPI.COMM_WORLD.Dup()
out = Path(sys.argv[1]) / f"rank{comm.Get_rank()}"
try:
    check_link(MPILink(comm))
    out.write_text("OK")
except BaseException:  # noqa: B036 - reported through the file, then the job fails
    out.write_text(traceback.format_exc())
    MPI.COMM_WORLD.Abort(1)
