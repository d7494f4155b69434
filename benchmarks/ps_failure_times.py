"""How long a parameter-server job takes to end, and what it says, when a worker or a server dies.

    python benchmarks/ps_failure_times.py [--repeats 3]

Four cases, each run ``--repeats`` times on 2 workers + 1 server on loopback: a worker or the
server leaves with ``os._exit(3)`` mid-training (``tests/mpi_programs/kv_killed.py``,
``kv_server_dies.py``), under MPI's auto cleanup (through ``python -m mxref.tools.launch``) and
under ``-disable-auto-cleanup`` (plain mpiexec, each rank under ``mxref.tools.rank_guard``). The
dying rank stamps the time just before it leaves; the figure is the median time from that stamp
to mpiexec's exit, and the message is the first line naming the dead rank.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from mpi_support import MPIEXEC, loopback_env, mpiexec  # noqa: E402

PROGS = ROOT / "tests" / "mpi_programs"


def one_run(case: str) -> tuple:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "job").mkdir()
        (tmp / "hold").mkdir()
        stamp = tmp / "death"
        prog = PROGS / ("kv_killed.py" if case.startswith("worker") else "kv_server_dies.py")
        env = loopback_env(MXREF_NUM_SERVERS=1, MXREF_KV_TIMEOUT=10, MXREF_DEATH_STAMP=stamp,
                           HOLD_DIR=tmp / "hold", MXREF_TEST_REPORT_DIR=tmp / "job")
        if case.endswith("auto cleanup"):
            cmd = [sys.executable, "-m", "mxref.tools.launch", "-n", "2", "-s", "1", "--mpiexec",
                   MPIEXEC, "--", sys.executable, str(prog)]
        else:
            env["MXREF_JOB_DIR"] = str(tmp / "job")
            cmd = [*mpiexec(3)[:-2], "-disable-auto-cleanup", "-n", "3", sys.executable, "-m",
                   "mxref.tools.rank_guard", "--", sys.executable, str(prog)]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        end = time.time()
        died = float(stamp.read_text())
        named = [line for line in proc.stderr.splitlines() if "died:" in line]
        return end - died, proc.returncode, named[0] if named else "(no line names the dead rank)"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    print(f"{'case':42s} {'median s':>9s} {'rc':>4s}  first line naming the dead rank")
    for case in ("worker dies, auto cleanup", "server dies, auto cleanup",
                 "worker dies, -disable-auto-cleanup", "server dies, -disable-auto-cleanup"):
        runs = [one_run(case) for _ in range(args.repeats)]
        med = statistics.median(r[0] for r in runs)
        print(f"{case:42s} {med:9.2f} {runs[-1][1]:4d}  {runs[-1][2]}")


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
