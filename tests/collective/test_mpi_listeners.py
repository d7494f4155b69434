"""Every socket a single-host ``launch`` job listens on is bound to loopback, hydra's included.

The test lists the job's listening TCP sockets from ``/proc`` while its ranks wait for a go-file
(no timing): the sockets of mpiexec, its proxy and the ranks, matched by inode with
``/proc/net/tcp`` and ``/proc/net/tcp6``.
"""
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mpi_support import ROOT, loopback_env, needs_mpi

from mxref.tools import loopback

PROG = ROOT / "tests/mpi_programs/hold_listeners.py"
LISTEN = "0A"


def _descendants(root: int) -> set:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = {root}, [root]
    while todo:
        pid = todo.pop()
        kids = [c for c, p in parents.items() if p == pid and c not in found]
        found.update(kids)
        todo.extend(kids)
    return found


def _socket_inodes(pids: set) -> set:
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            continue
    return inodes


def _address(hex_addr: str) -> str:
    host = bytes.fromhex(hex_addr.split(":")[0])
    if len(host) == 4:
        return socket.inet_ntop(socket.AF_INET, host[::-1])
    words = struct.unpack("<4I", host)           # /proc prints each 32-bit word little-endian
    return socket.inet_ntop(socket.AF_INET6, struct.pack(">4I", *words))


def listening_addresses(pids: set) -> list:
    """``[(address, port)]`` of every listening TCP socket the processes ``pids`` hold."""
    inodes, found = _socket_inodes(pids), []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            cols = row.split()
            if cols[3] == LISTEN and cols[9] in inodes:
                found.append((_address(cols[1]), int(cols[1].split(":")[1], 16)))
    return found


def run_holding_job(tmp_path, **env):
    """Start a 2-rank launch job, wait until both ranks are ready, list its listeners, end it."""
    proc = subprocess.Popen([sys.executable, "-m", "mxref.tools.launch", "-n", "2", "--", sys.executable,
                             str(PROG)], cwd=ROOT, env=loopback_env(HOLD_DIR=tmp_path, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not all((tmp_path / f"ready.{r}").exists() for r in range(2)):
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, "the ranks never became ready"
            time.sleep(0.05)
        found = listening_addresses(_descendants(proc.pid))
    finally:
        (tmp_path / "go").write_text("")
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
    assert proc.returncode == 0, proc.stdout.read().decode()
    return found


@needs_mpi
@pytest.mark.skipif(loopback.shim_path() is None, reason="the bind shim is not built")
@pytest.mark.timeout(200)
def test_a_single_host_job_listens_on_loopback_only(tmp_path):
    found = run_holding_job(tmp_path)
    assert len(found) >= 3, found        # hydra's control port and one endpoint per rank at least
    assert all(addr in ("127.0.0.1", "::1") for addr, _ in found), found


@needs_mpi
@pytest.mark.timeout(200)
def test_without_the_shim_hydra_listens_on_every_interface(tmp_path):
    """What the shim is for: hydra binds its control port to 0.0.0.0 in code; this documents it,
    and fails the day hydra stops doing so (the shim could then go)."""
    found = run_holding_job(tmp_path, MXREF_LOOPBACK_SHIM="0")
    assert "0.0.0.0" in {addr for addr, _ in found}, found
    assert all(addr in ("127.0.0.1", "::1", "0.0.0.0") for addr, _ in found), found


def test_loopback_env_adds_the_shim_once_and_keeps_other_preloads():
    shim = loopback.shim_path()
    if shim is None:
        pytest.skip("the bind shim is not built")
    env = loopback.loopback_env({"LD_PRELOAD": f"/x/other.so:{shim}"})
    assert env["LD_PRELOAD"] == f"{shim}:/x/other.so"
    assert env["FI_TCP_IFACE"] == "lo" and env["UCX_NET_DEVICES"] == "lo"
    assert loopback.loopback_env(env)["LD_PRELOAD"] == env["LD_PRELOAD"]
    off = loopback.loopback_env(dict(env, MXREF_LOOPBACK_SHIM="0"))
    assert off["LD_PRELOAD"] == "/x/other.so"
    assert "LD_PRELOAD" not in loopback.loopback_env({"LD_PRELOAD": shim, "MXREF_LOOPBACK_SHIM": "0"})
    assert loopback.loopback_env({"UCX_NET_DEVICES": "eth0"})["UCX_NET_DEVICES"] == "eth0"
