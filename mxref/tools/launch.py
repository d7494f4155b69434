"""Start a distributed job: ``python -m mxref.tools.launch -n W [-s S] [--engine robust] -- python prog.py``.

* ``--engine mpi`` (default): runs ``mpiexec -n W+S`` with ``MXREF_NUM_SERVERS=S`` (the parameter
  server's ranks ``0..S-1`` are servers), each rank under ``mxref.tools.rank_guard``, which names
  a rank that dies (rank, role, status; ``--no-guard`` leaves it out). Without a hostfile every
  listener of the job, hydra's own included, binds 127.0.0.1 (``mxref/tools/loopback.py``).
* ``--engine robust``: starts the collective tracker here and W worker processes itself, with
  ``MXREF_RANK``, ``MXREF_WORLD_SIZE``, ``MXREF_TRACKER_URI/PORT`` and ``MXREF_NUM_ATTEMPT``; a
  worker that exits with an error (or is killed) is restarted, up to ``--max-restarts`` times.
  The launcher makes a random 32-byte job secret and hands it to its workers in
  ``MXREF_JOB_SECRET`` (the environment, never the command line); every tracker and peer
  connection authenticates with it. The tracker and the workers listen on ``--host``
  (``127.0.0.1`` unless a cluster asks for another interface). Workers get a parent-death signal
  (Linux) and stay in the launcher's process group, so a launcher that dies (even by SIGKILL)
  takes its workers with it.
* ``--hostfile FILE``: ranks go to the file's hosts in Hydra's order (each host's slots, then
  round again). A hostfile written by ``python -m mxref.tools.cluster up`` names namespace hosts
  of this machine: mpi runs get the cluster's launcher-exec script, ``-iface`` of its bridge and
  TCP-only libfabric/UCX settings; robust runs put the tracker on the bridge and start each worker
  inside its host (``cluster_plan``, ``robust_placement``).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Tuple

from ..kvstore.ps.failure import notice_line, read_notices
from . import loopback


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m mxref.tools.launch", description=__doc__.split("\n")[0])
    p.add_argument("-n", "--num-workers", type=int, required=True)
    p.add_argument("-s", "--num-servers", type=int, default=0)
    p.add_argument("--hostfile", default=None, help="mpiexec hostfile (mpi engine)")
    p.add_argument("--engine", choices=["mpi", "robust"], default="mpi")
    p.add_argument("--max-restarts", type=int, default=3, help="restarts allowed per worker (robust)")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface the robust tracker and workers listen on (default loopback)")
    p.add_argument("--no-guard", dest="guard", action="store_false",
                   help="mpi engine: start the ranks bare, not under mxref.tools.rank_guard")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to call (default: next to python, or PATH)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- program and its arguments")
    args = p.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        p.error("no program given; put it after --")
    if args.num_workers < 1 or args.num_servers < 0:
        p.error("need -n >= 1 and -s >= 0")
    return args


def mpi_command(args: argparse.Namespace) -> List[str]:
    """The mpiexec line for an mpi run (exposed for tests)."""
    mpiexec = args.mpiexec or shutil.which("mpiexec", path=os.path.dirname(sys.executable)) \
        or shutil.which("mpiexec") or "mpiexec"
    where = ["-f", args.hostfile, *cluster_plan(args)[0]] if args.hostfile \
        else list(loopback.MPIEXEC_FLAGS)
    guard = [sys.executable, "-m", "mxref.tools.rank_guard", "--"] if args.guard else []
    return [mpiexec, *where, "-n", str(args.num_workers + args.num_servers), *guard, *args.command]


def run_mpi(args: argparse.Namespace) -> int:
    """mpiexec with every rank under ``rank_guard``: a rank that dies is named (rank, role,
    status) by its guard, and again here once mpiexec has ended."""
    env = dict(os.environ, MXREF_NUM_SERVERS=str(args.num_servers))
    if not args.hostfile:
        env = loopback.loopback_env(env)
    else:
        env.update(cluster_plan(args)[1])
    with tempfile.TemporaryDirectory(prefix="mxref-job-") as job_dir:
        env["MXREF_JOB_DIR"] = job_dir
        code = subprocess.call(mpi_command(args), env=env)
        for notice in read_notices(job_dir):
            print(f"[launch] {notice_line(notice)}", file=sys.stderr, flush=True)
    if code and args.hostfile:
        print(f"[launch] the job failed (exit {code}); {placement_text(args)}", file=sys.stderr,
              flush=True)
    return code


def cluster_plan(args: argparse.Namespace) -> Tuple[List[str], Dict[str, str]]:
    """For a hostfile of ``mxref.tools.cluster``'s namespace hosts: the extra mpiexec options and
    environment (none for a hostfile of real machines, which Hydra reaches by ssh)."""
    from . import cluster, hostfile
    if not os.path.isfile(args.hostfile):
        return [], {}                  # mpiexec itself says the file is missing
    state = hostfile.read(args.hostfile).cluster()
    if state is None:
        return [], {}
    return cluster.mpiexec_options(state), cluster.mpi_env(state)


def placement_text(args: argparse.Namespace) -> str:
    """Which host each MPI rank ran on (servers first), so an error naming a rank names a host."""
    from . import hostfile
    try:
        hosts = hostfile.read(args.hostfile)
        state = hosts.cluster() or {"hosts": []}
    except (OSError, ValueError) as exc:
        return f"placement unknown ({exc})"
    names = {h["addr"]: f"{h['name']} ({h['addr']})" for h in state["hosts"]}
    where = hosts.placement(args.num_workers + args.num_servers)
    roles = [f"server {r}" if r < args.num_servers else f"worker {r - args.num_servers}"
             for r in range(len(where))]
    return "ranks were on: " + ", ".join(f"MPI rank {r} = {role} on {names.get(h, h)}"
                                         for r, (role, h) in enumerate(zip(roles, where)))


Placement = Callable[[int], Tuple[List[str], Dict[str, str]]]


def robust_placement(args: argparse.Namespace) -> Tuple[str, Placement]:
    """Where a robust job's pieces go: the tracker's listening address, and for each rank the
    command prefix that starts it on its host and the variables it needs there. Without a
    hostfile everything is local on ``--host``; with a cluster hostfile the tracker listens on the
    bridge and rank r runs inside its host (the cluster's exec script, which keeps the
    environment, so the job secret never appears on a command line) and listens on that host's
    address."""
    if not args.hostfile:
        return args.host, lambda rank: ([], {"MXREF_BIND_HOST": args.host})
    from . import hostfile
    hosts = hostfile.read(args.hostfile)
    state = hosts.cluster()
    if state is None:
        raise SystemExit("launch: --engine robust with a hostfile needs hosts made by python -m "
                         "mxref.tools.cluster (over ssh the job secret would have to travel on the "
                         "command line); on real machines start the workers with mpiexec -f instead")
    where = hosts.placement(args.num_workers)
    # The cluster's launcher-exec script, the one mpiexec uses: ``exec HOST -- program``.
    return state["bridge_addr"], lambda rank: ([state["exec"], where[rank], "--"],
                                               {"MXREF_BIND_HOST": where[rank]})


def _parent_death_signal():
    """A ``preexec_fn`` that makes the child get SIGKILL when the launcher dies (Linux's
    PR_SET_PDEATHSIG), or None where there is no ``prctl``.

    NOTE: libc is loaded here, in the parent: the child runs between fork and exec while the
    tracker's threads may hold locks (the import lock among them), so it must not import anything.
    """
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None         # not Linux: the shared process group still lets a shell's kill reach them
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, int(signal.SIGKILL))      # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:         # the launcher died before prctl took effect
            os._exit(1)
    return preexec


def run_robust(args: argparse.Namespace) -> int:
    from mxref.collective.tracker import Tracker
    world = args.num_workers
    tracker_host, place = robust_placement(args)
    tracker = Tracker(world, host=tracker_host).start()
    env = dict(os.environ)
    env.pop("MXREF_JOB_SECRET", None)   # every job gets its own
    base_env = dict(env, MXREF_COLLECTIVE_ENGINE=os.environ.get("MXREF_COLLECTIVE_ENGINE", "robust"),
                    **tracker.env())

    preexec = _parent_death_signal()

    def spawn(rank: int, attempt: int) -> subprocess.Popen:
        prefix, extra = place(rank)
        env = dict(base_env, MXREF_RANK=str(rank), MXREF_NUM_ATTEMPT=str(attempt), **extra)
        return subprocess.Popen([*prefix, *args.command], env=env, preexec_fn=preexec)

    procs = {r: spawn(r, 0) for r in range(world)}
    attempts = dict.fromkeys(range(world), 0)
    status = 0
    try:
        while procs:
            time.sleep(0.02)
            for rank, proc in list(procs.items()):
                code = proc.poll()
                if code is None:
                    continue
                del procs[rank]
                if code == 0:
                    continue
                if attempts[rank] >= args.max_restarts:
                    print(f"[launch] worker {rank} failed (exit {code}) after {attempts[rank]} restarts; "
                          "stopping the job", file=sys.stderr, flush=True)
                    status = code if code > 0 else 1
                    for other in procs.values():
                        other.kill()
                    procs.clear()
                    break
                attempts[rank] += 1
                print(f"[launch] worker {rank} exited with {code}; restart {attempts[rank]} of "
                      f"{args.max_restarts}", file=sys.stderr, flush=True)
                procs[rank] = spawn(rank, attempts[rank])
    finally:
        for proc in procs.values():
            proc.kill()
        tracker.close()
    return status


def main(argv: Optional[List[str]] = None) -> int:
    args = _parse(argv)
    return run_robust(args) if args.engine == "robust" else run_mpi(args)


if __name__ == "__main__":
    sys.exit(main())
