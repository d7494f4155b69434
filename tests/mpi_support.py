"""What the tests that launch jobs under mpiexec share: where mpiexec is, the skip marker when MPI
is missing, and the loopback-only launch (the launcher's own flags and environment,
``mxref/tools/loopback.py``)."""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mxref.tools import loopback

ROOT = Path(__file__).resolve().parents[1]
# The mpich wheel puts mpiexec next to the venv's python; a system one is the fallback.
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")

try:
    import mpi4py  # noqa: F401
    HAVE_MPI = MPIEXEC is not None
except ImportError:
    HAVE_MPI = False

needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs mpi4py and mpiexec (pip install mpi4py mpich)")


def loopback_env(**extra) -> dict:
    """The environment of an MPI job that must not leave this machine, with mxref importable;
    ``extra`` adds or overrides variables (values made strings)."""
    env = loopback.loopback_env(dict(os.environ, PYTHONPATH=str(ROOT)))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_reporting(cmd: list, timeout: float, env: dict) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd)`` from the repository root with a fresh report folder
    (``tests/mpi_programs/report.py``); ``proc.reports`` holds every rank's report lines, rank
    file by rank file, so no test depends on how mpiexec interleaves (or drops) stdout lines."""
    with tempfile.TemporaryDirectory(prefix="mxref-reports-") as folder:
        proc = subprocess.run(cmd, env=dict(env, MXREF_TEST_REPORT_DIR=folder), cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
        proc.reports = "".join(p.read_text() for p in sorted(Path(folder).iterdir()))
    return proc


def mpiexec(n: int) -> list:
    """The command prefix that starts ``n`` ranks on loopback."""
    return [MPIEXEC, *loopback.MPIEXEC_FLAGS, "-n", str(n)]


def run_per_rank(n: int, cmd: list, timeout: float, env: dict) -> subprocess.CompletedProcess:
    """``mpiexec -n n cmd`` from the repository root, with each rank's stdout and stderr in files
    of its own (Hydra's ``-outfile-pattern``/``-errfile-pattern``): ``proc.ranks[r]`` is rank
    ``r``'s whole stdout followed by its stderr, and ``proc.stdout`` joins them rank by rank after
    mpiexec's own output, so no line is glued to another rank's or lost in the merge, for
    programs that write no report files (the examples, the demo)."""
    with tempfile.TemporaryDirectory(prefix="mxref-ranks-") as folder:
        proc = subprocess.run([*mpiexec(n)[:-2], "-outfile-pattern", f"{folder}/out.%r",
                               "-errfile-pattern", f"{folder}/err.%r", "-n", str(n), *cmd],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        files = [Path(folder, f"{kind}.{r}") for r in range(n) for kind in ("out", "err")]
        texts = [f.read_text() if f.exists() else "" for f in files]
    proc.ranks = [texts[2 * r] + texts[2 * r + 1] for r in range(n)]
    proc.stdout = proc.stdout + "".join(proc.ranks)
    return proc
