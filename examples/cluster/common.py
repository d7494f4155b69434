"""What the cluster experiments share: a cluster made for one experiment and always taken down,
hostfiles that place ranks on chosen hosts, jobs whose ranks each write a JSON result file."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mxref.tools import cluster, hostfile, netns  # noqa: E402

PY = sys.executable
# The experiments' own names and addresses, apart from a user's cluster (mxref-, 10.77.0.0/24).
PREFIX, SUBNET = "mxexp-", "10.77.100.0/24"


@contextlib.contextmanager
def hosts(n: int, bandwidth: str = "unlimited"):
    """``n`` hosts for the block; ``down`` runs however the block ends."""
    why = netns.missing_privileges()
    if why:
        raise SystemExit(f"the cluster experiments need root: {why}")
    folder = Path(tempfile.mkdtemp(prefix="mxref-exp-"))
    try:
        state = cluster.up(n, str(folder / "all-hosts.txt"), bandwidth, SUBNET, PREFIX, folder)
        state["folder"] = folder
        yield state
    finally:
        cluster.down(folder)


def limit_all(state: dict, bandwidth: str) -> None:
    for h in state["hosts"]:
        cluster.set_limit(h["name"], bandwidth, state["folder"])


def place(state: dict, ranks_per_host: list) -> str:
    """A hostfile putting ``ranks_per_host[i]`` consecutive ranks on host i (0 skips it)."""
    path = state["folder"] / f"hosts-{'-'.join(map(str, ranks_per_host))}.txt"
    hostfile.write(str(path), [(h["addr"], k) for h, k in zip(state["hosts"], ranks_per_host) if k],
                   state=str(cluster.state_path(state["folder"])))
    return str(path)


def run_job(state: dict, placement: str, workers: int, servers: int, args: list, engine: str = "mpi",
            timeout: float = 600, env: dict = None, check: bool = True):
    """Run ``job.py ARGS`` through the launcher; returns (results by rank, proc, seconds)."""
    out = Path(tempfile.mkdtemp(prefix="mxref-exp-out-", dir=state["folder"]))
    cmd = [PY, "-m", "mxref.tools.launch", "-n", str(workers), "--hostfile", placement]
    cmd += ["-s", str(servers)] if engine == "mpi" else ["--engine", "robust", "--max-restarts", "0"]
    cmd += ["--", PY, str(Path(__file__).parent / "job.py"), *map(str, args)]
    environ = dict(os.environ, PYTHONPATH=str(ROOT), MXREF_CLUSTER_DIR=str(state["folder"]),
                   RESULT_DIR=str(out), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **(env or {}))
    t0 = time.perf_counter()
    proc = run(cmd, timeout, env=environ, cwd=ROOT)
    seconds = time.perf_counter() - t0
    if check and proc.returncode:
        raise SystemExit(f"job {args} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}")
    results = {int(p.stem[4:]): json.loads(p.read_text()) for p in out.glob("rank*.json")}
    return results, proc, seconds


def run(cmd: list, timeout: float, **kw) -> subprocess.CompletedProcess:
    """``subprocess.run`` in a session of its own: past ``timeout`` the launcher and its mpiexec are
    killed together (an mpiexec whose proxies vanished would wait forever)."""
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n(killed after {timeout} s)"
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def link_bytes(state: dict) -> dict:
    return cluster.link_bytes(state)


def table(header: list, rows: list) -> str:
    cells = [[str(c) for c in header]] + [[f"{c:.4g}" if isinstance(c, float) else str(c) for c in r]
                                         for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
