"""Run one MPI rank's program and, if it dies, say which rank and role it was:
``mpiexec ... python -m mxref.tools.rank_guard -- python prog.py``.

Why a guard: when a rank dies, MPICH's process manager SIGKILLs every other rank at once (its
"auto cleanup"), so no survivor lives to say who died, and hydra's own banner can name the wrong
process. The guard is the rank's parent; it outlives its program, so it can always tell:

* one line on its stderr, written in one call:
  ``[launch] MPI rank 2 (worker 1) died: exit status 3 (pid 4242 on host h)``;
* a notice ``$MXREF_JOB_DIR/dead.<rank>`` (JSON), which the launcher prints again after mpiexec
  ends (so the line survives hydra's output forwarding) and which the surviving ranks of a
  ``-disable-auto-cleanup`` job read when hydra signals them (``mxref/kvstore/ps/failure.py``).

It then exits the way its program did (the same status, or the same signal), so mpiexec reports
what it always did. The program gets a parent-death signal, so it never outlives its guard, and
the guard forwards SIGINT, SIGTERM, SIGHUP and SIGUSR1 to it. ``python -m mxref.tools.launch``
puts every rank of an mpi job under a guard.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from typing import List, Optional

from ..kvstore.ps.failure import describe_status, notice_line, role_of, write_notice
from .launch import _parent_death_signal

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        sys.stderr.write("usage: python -m mxref.tools.rank_guard -- program [args...]\n")
        return 2
    # NOTE: close_fds=False: hydra hands each rank its PMI connection as an inherited descriptor.
    child = subprocess.Popen(argv, close_fds=False, preexec_fn=_parent_death_signal())
    for sig in FORWARDED:
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    while True:
        try:
            code = child.wait()
            break
        except InterruptedError:
            continue
    if code == 0:
        return 0
    rank = int(os.environ.get("PMI_RANK", os.environ.get("MXREF_RANK", "-1")))
    notice = {"rank": rank, "role": role_of(rank, int(os.environ.get("MXREF_NUM_SERVERS", "1"))),
              "status": describe_status(code), "pid": child.pid, "host": socket.gethostname()}
    job_dir = os.environ.get("MXREF_JOB_DIR")
    if job_dir and os.path.isdir(job_dir):
        write_notice(job_dir, notice)
    os.write(2, f"[launch] {notice_line(notice)}\n".encode())
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)          # die the way the program did
    return code if code > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
