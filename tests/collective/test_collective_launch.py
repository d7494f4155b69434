"""The launcher: mpi runs via mpiexec; robust runs with a tracker, restarts after SIGKILL and mock kills."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from mpi_support import loopback_env, run_reporting

from mxref.tools import launch, loopback

ROOT = Path(__file__).resolve().parents[2]
PROG = ROOT / "tests/mpi_programs/collective_robust_prog.py"


def launch_run(args, env=None, timeout=120):
    """The launcher as a user runs it; ``proc.reports`` holds every rank's report lines, read from
    the ranks' own files (``run_reporting``), never from the launcher's merged stdout."""
    return run_reporting([sys.executable, "-m", "mxref.tools.launch", *args], timeout=timeout,
                         env=loopback_env(**(env or {})))


def expected(world, iters=4):
    """The failure-free result, in closed form: every rank can check it alone."""
    model = np.zeros(4)
    for it in range(iters):
        grad = sum(np.arange(4.0) * (r + 1) + it for r in range(world))
        model = model * 0.5 + grad + float(world - 1 + it)
    return model.tolist()


def check_results(proc, world):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in proc.reports.splitlines()]
    assert sorted(d["rank"] for d in lines) == list(range(world)), proc.stdout + proc.stderr
    for d in lines:
        assert d["model"] == expected(world) and d["version"] == 4 and d["world"] == world
        assert d["local"] == 4 * (d["rank"] + 1)


def test_sigkilled_worker_is_restarted_and_the_job_finishes_identically():
    """Rank 1 SIGKILLed mid-iteration 2 (after the ring allreduce): restarted once, same results."""
    proc = launch_run(["-n", "3", "--engine", "robust", "--max-restarts", "2", "--", sys.executable,
                       str(PROG)], env={"KILL_AT": "1,2"})
    check_results(proc, 3)
    assert "worker 1 exited with -9; restart 1 of 2" in proc.stderr


def test_mock_engine_kills_a_process_during_a_checkpoint():
    """MXREF_MOCK='1,1,2' SIGKILLs rank 1 inside checkpoint 1 (its third call of version 1)."""
    proc = launch_run(["-n", "2", "--engine", "robust", "--", sys.executable, str(PROG)],
                      env={"MXREF_COLLECTIVE_ENGINE": "mock", "MXREF_MOCK": "1,1,2"})
    check_results(proc, 2)
    assert "worker 1 exited with -9" in proc.stderr and "worker 0 exited" not in proc.stderr


def test_a_worker_failing_past_max_restarts_stops_the_job():
    """A worker that keeps failing is restarted K times, then the launcher gives up with its code."""
    proc = launch_run(["-n", "2", "--engine", "robust", "--max-restarts", "1", "--", sys.executable, "-c",
                       "import os, sys; sys.exit(3 if os.environ['MXREF_RANK'] == '1' else 0)"], timeout=30)
    assert proc.returncode == 3
    assert "worker 1 failed (exit 3) after 1 restarts" in proc.stderr


def test_mpi_runs_call_mpiexec_with_the_server_count(tmp_path):
    """An mpi launch runs W+S processes on loopback with MXREF_NUM_SERVERS=S."""
    args = launch._parse(["-n", "2", "-s", "1", "--", "python", "x.py"])
    cmd = launch.mpi_command(args)
    guard = [sys.executable, "-m", "mxref.tools.rank_guard", "--"]
    assert cmd[1:] == [*loopback.MPIEXEC_FLAGS, "-n", "3", *guard, "python", "x.py"]
    hostfile = launch.mpi_command(launch._parse(["-n", "4", "--hostfile", "hosts", "--", "p"]))
    assert hostfile[1:] == ["-f", "hosts", "-n", "4", *guard, "p"]
    bare = launch.mpi_command(launch._parse(["-n", "1", "--no-guard", "--", "p"]))
    assert bare[-3:] == ["-n", "1", "p"]
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("the mpi launch itself needs mpi4py and mpiexec")
    # NOTE: each rank reports through its own file: mpiexec's forwarded stdout can lose the line
    # of a process that exits at once, so counting lines there was flaky.
    proc = launch_run(["-n", "2", "-s", "1", "--", sys.executable, "-c",
                       "import os, pathlib; pathlib.Path(os.environ['OUT'], os.environ['PMI_RANK'])"
                       ".write_text('servers ' + os.environ['MXREF_NUM_SERVERS'])"], timeout=60,
                      env={"OUT": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {r: "servers 1" for r in "012"}


def test_bad_command_lines():
    """No program, or a world of zero workers, is a usage error."""
    with pytest.raises(SystemExit):
        launch._parse(["-n", "2"])
    with pytest.raises(SystemExit):
        launch._parse(["-n", "0", "--", "p"])
