"""How a parameter-server rank learns that another rank died, and says which, when MPI's process
manager lets it live (``mpiexec -disable-auto-cleanup``).

Hydra then sends SIGUSR1 to every surviving rank. A rank may be blocked inside an MPI call for
ever (a worker waiting on a dead server's reply), where a Python signal handler never runs; so
the handler here is only a wake-up: ``signal.set_wakeup_fd`` makes the C-level handler write the
signal's number into a pipe, from whichever thread caught it, and a daemon thread reading that
pipe does the work. It names the dead rank from the notice its guard wrote
(``mxref/tools/rank_guard.py``, ``$MXREF_JOB_DIR/dead.<rank>``), or, without one (a plain
``mpiexec`` line), from the ranks on this host whose process is gone, and then:

* a dead **server** ends every worker at once (its keys can never be pushed or pulled again),
  with the notice on stderr;
* a dead **worker** is reported, and the job goes on as its consistency model allows: a
  ``dist_sync`` server times out on the missing push (``MXREF_KV_TIMEOUT``) naming it, while
  ``dist_async`` workers keep training.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional

__all__ = ["watch_for_failures", "NOTICE_WAIT_S", "role_of", "describe_status", "read_notices",
           "write_notice", "notice_line"]

NOTICE_WAIT_S = 5.0     # how long a survivor looks for the dead rank before saying it cannot tell


def role_of(mpi_rank: int, num_servers: int) -> str:
    """``'server 0'`` / ``'worker 1'``: the parameter server's roles (ranks ``0..S-1`` serve)."""
    if mpi_rank < num_servers:
        return f"server {mpi_rank}"
    return f"worker {mpi_rank - num_servers}"


def describe_status(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def read_notices(job_dir: Optional[str]) -> List[dict]:
    """The death notices guards wrote into ``job_dir``, by rank (none if no such folder)."""
    if not job_dir or not os.path.isdir(job_dir):
        return []
    notices = []
    for path in sorted(Path(job_dir).glob("dead.*")):
        try:
            notices.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue            # a notice being written right now; its guard prints it anyway
    return sorted(notices, key=lambda n: n["rank"])


def notice_line(notice: dict) -> str:
    return (f"MPI rank {notice['rank']} ({notice['role']}) died: {notice['status']} "
            f"(pid {notice['pid']} on host {notice['host']})")


def write_notice(job_dir: str, notice: dict) -> None:
    tmp = Path(job_dir, f".dead.{notice['rank']}.tmp")
    tmp.write_text(json.dumps(notice))
    os.replace(tmp, Path(job_dir, f"dead.{notice['rank']}"))   # readers never see half a notice


def _is_gone(pid: int) -> bool:
    """No such process, or a zombie (dead, not yet reaped by hydra's proxy)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False


def _gone(peers, roles) -> List[dict]:
    """Notices for the ranks on this host whose process is dead (``peers``: every rank's
    ``(host, pid)``, gathered when the runtime started); other hosts' ranks cannot be checked."""
    host = socket.gethostname()
    return [{"rank": rank, "role": role_of(rank, roles.num_servers), "status": "its process is gone",
             "pid": pid, "host": host}
            for rank, (peer_host, pid) in enumerate(peers or ())
            if peer_host == host and rank != roles.mpi_rank and _is_gone(pid)]


def _notices(roles, peers) -> List[dict]:
    """Who died: the guards' notices, else the dead local ranks; polled for a moment, since
    hydra may signal while it is still writing the notice or reaping the process."""
    job_dir = os.environ.get("MXREF_JOB_DIR")
    deadline = time.monotonic() + NOTICE_WAIT_S
    while True:
        notices = read_notices(job_dir) or _gone(peers, roles)
        if notices or time.monotonic() > deadline:
            return notices
        time.sleep(0.05)


def _react(roles, peers, exit_fn: Callable[[int], None]) -> None:
    me = roles.name(roles.mpi_rank)
    notices = _notices(roles, peers)
    if not notices:
        os.write(2, (f"kvstore: {me}: MPI reported a dead process on another host (hydra's "
                     "SIGUSR1); start the job with python -m mxref.tools.launch to have it named\n"
                     ).encode())
        return
    lines = "".join(f"kvstore: {me}: {notice_line(n)}\n" for n in notices)
    dead_server = any(n["rank"] < roles.num_servers for n in notices)
    if dead_server and roles.is_worker:
        os.write(2, (lines + f"kvstore: {me}: a server is gone; ending this worker\n").encode())
        exit_fn(1)
    else:
        os.write(2, lines.encode())


def watch_for_failures(roles, peers=None, exit_fn: Optional[Callable[[int], None]] = None) -> bool:
    """Start the watcher for this process; False where it cannot run (not the main thread, no
    SIGUSR1, or the wake-up descriptor already belongs to someone else, such as asyncio).
    ``peers[r]`` is rank ``r``'s ``(host, pid)``, for naming a dead rank without a notice."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGUSR1"):
        return False
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    if previous != -1:
        signal.set_wakeup_fd(previous)
        os.close(read_end)
        os.close(write_end)
        return False
    signal.signal(signal.SIGUSR1, lambda _s, _f: None)   # the pipe is the real handler
    exit_fn = exit_fn or (lambda code: (sys.stderr.flush(), os._exit(code)))

    def watch() -> None:
        while True:
            data = os.read(read_end, 64)
            if not data:
                return
            if signal.SIGUSR1 in data:
                _react(roles, peers, exit_fn)

    threading.Thread(target=watch, name="mxref-kv-failure-watch", daemon=True).start()
    return True
