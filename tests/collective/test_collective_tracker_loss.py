"""Losing the tracker or the launcher ends the robust workers, with an error naming the tracker."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACKER = ("import sys, time\nfrom mxref.collective.tracker import Tracker\n"
           "t = Tracker(3).start()\nprint(t.port, t.secret.hex(), flush=True)\ntime.sleep(600)\n")
WORKER = "from mxref import collective\ncollective.init()\ncollective.finalize()\n"
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process tests use Linux signals")


def start_tracker():
    proc = subprocess.Popen([sys.executable, "-c", TRACKER], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    port, secret = proc.stdout.readline().split()
    return proc, int(port), secret


def start_workers(port, secret, tmp_path, ranks):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MXREF_TRACKER_URI="127.0.0.1", MXREF_TRACKER_PORT=str(port),
               MXREF_WORLD_SIZE="3", MXREF_JOB_SECRET=secret, MXREF_COLLECTIVE_TIMEOUT="5",
               MXREF_COLLECTIVE_ENGINE="robust")
    return [subprocess.Popen([sys.executable, "-c", WORKER], cwd=ROOT, stderr=open(tmp_path / f"err{r}", "w"),
                             env=dict(env, MXREF_RANK=str(r))) for r in ranks]


@pytest.mark.parametrize("when", ["while the workers wait at it", "before the workers start"])
def test_a_killed_tracker_ends_every_worker_with_its_address(tmp_path, when):
    """Two of three ranks join, the tracker is SIGKILLed: both exit non-zero, naming 127.0.0.1:port
    (they used to retry connect() forever, or die of a bare ConnectionRefusedError)."""
    tracker, port, secret = start_tracker()
    workers = []
    try:
        if when == "before the workers start":
            tracker.kill()
            tracker.wait(30)
        workers = start_workers(port, secret, tmp_path, [0, 1])
        tracker.kill()
        codes = [w.wait(60) for w in workers]      # hard bound; they must end by themselves
    finally:
        tracker.kill()
        for w in workers:
            w.kill()
    assert all(c != 0 for c in codes), codes
    for r in (0, 1):
        err = (tmp_path / f"err{r}").read_text()
        assert f"lost the tracker at 127.0.0.1:{port}" in err, err


def test_a_killed_launcher_takes_its_workers_with_it(tmp_path):
    """SIGKILL on the launcher (and so its tracker): the workers get the parent-death signal."""
    prog = ("import os, pathlib, time\n"
            "pathlib.Path(os.environ['OUT'], os.environ['MXREF_RANK']).write_text(str(os.getpid()))\n"
            "time.sleep(600)\n")
    launcher = subprocess.Popen([sys.executable, "-m", "mxref.tools.launch", "-n", "2", "--engine", "robust",
                                 "--", sys.executable, "-c", prog], cwd=ROOT,
                                env=dict(os.environ, PYTHONPATH=str(ROOT), OUT=str(tmp_path)))
    try:
        end = time.monotonic() + 60
        while not all(p.exists() and p.read_text() for p in (tmp_path / "0", tmp_path / "1")) \
                and time.monotonic() < end:
            time.sleep(0.05)
        pids = [int((tmp_path / r).read_text()) for r in "01"]
    finally:
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(30)
    end = time.monotonic() + 30
    alive = pids
    while alive and time.monotonic() < end:
        alive = [p for p in pids if _alive(p)]
        time.sleep(0.05)
    assert not alive, f"workers {alive} outlived their launcher"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child of a dead parent is reaped by init; until then it is a zombie.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
