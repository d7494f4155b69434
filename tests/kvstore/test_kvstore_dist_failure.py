"""A dead rank of a parameter-server job is named: by its guard under MPI's auto cleanup (which
SIGKILLs every survivor at once), and by the survivors under ``-disable-auto-cleanup``."""
import sys
import time

import pytest
from mpi_support import MPIEXEC, ROOT, loopback_env, mpiexec, needs_mpi, run_per_rank

from mxref.kvstore.ps import failure

SCRIPTS = ROOT / "tests" / "mpi_programs"

pytestmark = needs_mpi


@pytest.mark.timeout(120)
def test_the_launcher_names_a_dead_worker_and_its_role():
    """kv_killed.py: worker 1 (MPI rank 2) leaves with os._exit(3); hydra kills the others. The
    launcher prints the guard's notice after mpiexec has ended, from one process."""
    import subprocess  # noqa: PLC0415
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mxref.tools.launch", "-n", "2", "-s", "1",
                           "--mpiexec", MPIEXEC, "--", sys.executable, str(SCRIPTS / "kv_killed.py")],
                          cwd=ROOT, env=loopback_env(MXREF_KV_TIMEOUT=20), capture_output=True,
                          text=True, timeout=100)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    last = proc.stderr.rstrip().splitlines()[-1]
    assert last.startswith("[launch] MPI rank 2 (worker 1) died: exit status 3 (pid "), proc.stderr
    assert time.monotonic() - t0 < 60


@pytest.mark.timeout(120)
def test_a_dead_server_under_disable_auto_cleanup_ends_every_worker_with_its_name(tmp_path):
    """kv_server_dies.py: the server leaves after round 2; both workers name it and end."""
    job_dir, hold = tmp_path / "job", tmp_path / "hold"
    job_dir.mkdir()
    hold.mkdir()
    cmd = ["-disable-auto-cleanup", sys.executable, "-m", "mxref.tools.rank_guard", "--",
           sys.executable, str(SCRIPTS / "kv_server_dies.py")]
    env = loopback_env(MXREF_NUM_SERVERS=1, MXREF_JOB_DIR=job_dir, HOLD_DIR=hold, MXREF_KV_TIMEOUT=30)
    proc = run_per_rank(3, cmd, timeout=100, env=env)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "died: exit status 3" in proc.ranks[0]          # the server's own guard
    for mpi_rank, worker in ((1, 0), (2, 1)):
        text = proc.ranks[mpi_rank]
        me = f"kvstore: worker {worker} (MPI rank {mpi_rank})"
        assert f"{me}: MPI rank 0 (server 0) died: exit status 3 (pid " in text, text
        assert f"{me}: a server is gone; ending this worker" in text, text
        assert "finished all rounds" not in text


@pytest.mark.timeout(120)
def test_without_a_guard_the_survivors_name_a_dead_local_rank_by_its_pid():
    """A plain mpiexec -disable-auto-cleanup line (no guard, no job folder): worker 1 leaves;
    the server names it from the pids gathered at start; the round then times out as before."""
    cmd = ["-disable-auto-cleanup", sys.executable, str(SCRIPTS / "kv_killed.py")]
    proc = run_per_rank(3, cmd, timeout=100, env=loopback_env(MXREF_NUM_SERVERS=1, MXREF_KV_TIMEOUT=2))
    assert proc.returncode != 0, proc.stdout + proc.stderr
    server = proc.ranks[0]
    assert "kvstore: server 0 (MPI rank 0): MPI rank 2 (worker 1) died: its process is gone" in server, server
    worker0 = proc.ranks[1]
    assert "worker 1 (MPI rank 2) did not push within MXREF_KV_TIMEOUT=2s" in worker0, worker0


def test_notices_round_trip_and_name_roles(tmp_path):
    assert failure.role_of(0, 1) == "server 0" and failure.role_of(3, 2) == "worker 1"
    assert failure.describe_status(-9) == "killed by SIGKILL"
    assert failure.describe_status(3) == "exit status 3"
    notice = {"rank": 2, "role": "worker 1", "status": "killed by SIGKILL", "pid": 7, "host": "h"}
    failure.write_notice(str(tmp_path), notice)
    (tmp_path / "dead.x").write_text("{half")                    # a notice being written: skipped
    assert failure.read_notices(str(tmp_path)) == [notice]
    assert failure.notice_line(notice) == "MPI rank 2 (worker 1) died: killed by SIGKILL (pid 7 on host h)"
    assert failure.read_notices(str(tmp_path / "missing")) == [] and failure.read_notices(None) == []


def test_mpiexec_helper_is_the_loopback_prefix():
    assert mpiexec(3)[-2:] == ["-n", "3"]
