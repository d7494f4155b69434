"""How the programs here tell their test what each rank found: a line in the rank's own file.

mpiexec merges every rank's stdout into one stream, where a line of a rank that exits at once can
go missing; so each line also goes to ``$MXREF_TEST_REPORT_DIR/rank<R>`` (``R``: ``PMI_RANK``
under mpiexec, ``MXREF_RANK`` under the robust launcher), which the tests read instead
(``tests/mpi_support.py::run_reporting``). Without that variable only stdout gets the line.
"""
import os
import time
from pathlib import Path


def report(*parts) -> None:
    """``print(*parts)``, and append the line to this rank's report file."""
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    folder = os.environ.get("MXREF_TEST_REPORT_DIR")
    rank = os.environ.get("PMI_RANK", os.environ.get("MXREF_RANK"))
    if folder and rank is not None:
        with open(Path(folder) / f"rank{rank}", "a") as f:
            f.write(line + "\n")


def stamp_death() -> None:
    """Write ``time.time()`` to ``$MXREF_DEATH_STAMP`` (if set) just before a rank leaves on
    purpose, so ``benchmarks/ps_failure_times.py`` can measure how long the others take to end."""
    path = os.environ.get("MXREF_DEATH_STAMP")
    if path:
        Path(path).write_text(repr(time.time()))
