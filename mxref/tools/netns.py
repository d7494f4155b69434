"""Linux namespaces as hosts: the bridge, veth, tbf and holder-process primitives ``cluster.py`` uses.

A *host* is a network namespace (``ip netns add``) with one veth into a bridge in the root
namespace, plus a long-lived *holder* process that also owns the host's UTS (hostname), IPC,
mount (a private tmpfs on ``/dev/shm``, sysfs of its own network) and PID namespaces. MPI
libraries (UCX, libfabric's shm provider) decide "same node, use shared memory" from the hostname,
``/dev/shm`` and process ids; with only a network namespace they would move data through
shared memory and nothing would cross the link. A process *enters* a host by ``setns`` into the
holder's namespaces (``enter`` below), the way ``nsenter -t PID -a`` does.

This file imports nothing from mxref (it runs as a script for ``enter``, single-threaded, which
``setns`` into a mount namespace requires).
"""
from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional

# The namespaces a process joins to be "on" a host, in the order they are entered: the mount
# namespace last, because after it /proc is the host's and the holder's pid no longer resolves.
ENTER_ORDER = ("ipc", "uts", "net", "pid", "mnt")
CLONE_FLAG = {"ipc": 0x08000000, "uts": 0x04000000, "net": 0x40000000, "pid": 0x20000000,
              "mnt": 0x00020000}
PR_SET_PDEATHSIG = 1
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21


class NetnsError(RuntimeError):
    """A namespace, link or qdisc command failed (the message holds the command and its stderr)."""


def missing_privileges() -> Optional[str]:
    """None if this process may make namespaces and links, else why not (for a clear refusal)."""
    if not sys.platform.startswith("linux"):
        return "network-namespace hosts need Linux"
    try:
        with open("/proc/self/status") as f:
            caps = next(int(line.split()[1], 16) for line in f if line.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError):
        caps = 0
    need = [name for name, bit in (("CAP_NET_ADMIN", CAP_NET_ADMIN), ("CAP_SYS_ADMIN", CAP_SYS_ADMIN))
            if not caps >> bit & 1]
    if need:
        return (f"making network-namespace hosts needs root (missing {' and '.join(need)}); "
                "run it with sudo, or as root in a container started with --cap-add NET_ADMIN,SYS_ADMIN")
    for tool in ("ip", "tc", "unshare", "nsenter"):
        path = os.environ.get("PATH", "/usr/bin").split(os.pathsep) + ["/usr/sbin", "/sbin"]
        if not any(os.access(os.path.join(d, tool), os.X_OK) for d in path):
            return f"network-namespace hosts need the '{tool}' command (iproute2 / util-linux)"
    return None


def run(*cmd: str, check: bool = True, netns: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run ``ip``/``tc`` (inside ``netns`` if given); a failure raises NetnsError with its stderr."""
    full = ["ip", "netns", "exec", netns, *cmd] if netns else list(cmd)
    try:
        proc = subprocess.run(full, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        proc = subprocess.CompletedProcess(full, 127, "", f"{full[0]}: command not found")
    if check and proc.returncode != 0:
        raise NetnsError(f"'{' '.join(full)}' failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


# -- links -------------------------------------------------------------------------------------
def netns_names() -> List[str]:
    out = run("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def link_names() -> List[str]:
    out = run("ip", "-o", "link", "show", check=False).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]


def make_bridge(name: str, address: str, prefix_len: int) -> None:
    run("ip", "link", "add", name, "type", "bridge")
    run("ip", "addr", "add", f"{address}/{prefix_len}", "dev", name)
    run("ip", "link", "set", name, "up")


def make_host_link(netns: str, veth: str, inner: str, bridge: str, address: str, prefix_len: int) -> None:
    """The namespace, its veth pair (``veth`` in the root namespace on ``bridge``, ``inner`` inside
    with ``address``) and loopback up."""
    run("ip", "netns", "add", netns)
    run("ip", "link", "add", veth, "type", "veth", "peer", "name", inner, "netns", netns)
    run("ip", "link", "set", veth, "master", bridge, "up")
    run("ip", "-n", netns, "addr", "add", f"{address}/{prefix_len}", "dev", inner)
    run("ip", "-n", netns, "link", "set", inner, "up")
    run("ip", "-n", netns, "link", "set", "lo", "up")


def set_link(veth: str, up: bool) -> None:
    """Take a host's link down (a partition: its packets go nowhere) or bring it back."""
    run("ip", "link", "set", veth, "up" if up else "down")


def tbf_burst(rate_bits: int) -> int:
    """Bucket size in bytes: 10 ms of traffic, at least 256 KiB, since a veth hands tbf whole
    64 KiB GSO segments and a bucket smaller than one drops them."""
    return max(rate_bits // 8 // 100, 256 * 1024)


def set_limit(netns: str, veth: str, inner: str, rate_bits: Optional[int]) -> None:
    """A token bucket of ``rate_bits``/s on both directions of a host's link (egress of both veth
    ends: the root end shapes what the host receives, the inner end what it sends); None removes it."""
    for dev, ns in ((veth, None), (inner, netns)):
        run("tc", "qdisc", "del", "dev", dev, "root", netns=ns, check=False)
        if rate_bits:
            run("tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{rate_bits}bit",
                "burst", str(tbf_burst(rate_bits)), "latency", "100ms", netns=ns)


def counters(veth: str) -> Dict[str, int]:
    """The root end's byte counters: ``rx`` is what the host sent, ``tx`` what it received."""
    base = f"/sys/class/net/{veth}/statistics"
    with open(f"{base}/rx_bytes") as rx, open(f"{base}/tx_bytes") as tx:
        return {"sent": int(rx.read()), "received": int(tx.read())}


def parse_rate(text: str) -> Optional[int]:
    """``100mbit``, ``1gbit``, ``500kbit``, ``2000000`` (bits/s) -> bits/s; ``unlimited``/``0`` -> None."""
    t = text.strip().lower()
    if t in ("unlimited", "none", "0", ""):
        return None
    for suffix, mult in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3), ("bit", 1)):
        if t.endswith(suffix):
            t, scale = t[: -len(suffix)], mult
            break
    else:
        scale = 1
    try:
        value = float(t) * scale
    except ValueError:
        raise ValueError(f"bandwidth {text!r}: expected a number with kbit, mbit or gbit "
                         "(e.g. 100mbit, 1gbit) or 'unlimited'") from None
    if value < 8000:
        raise ValueError(f"bandwidth {text!r} is below 8 kbit/s")
    return int(value)


def delete_link(name: str) -> None:
    run("ip", "link", "del", name, check=False)


def delete_netns(name: str) -> None:
    run("ip", "netns", "del", name, check=False)


# -- holders -----------------------------------------------------------------------------------
def start_holder(netns: str, hostname: str, shm_bytes: int = 1 << 30) -> Dict[str, int]:
    """Start the process that owns a host's UTS, IPC, mount and PID namespaces (it joins the network
    namespace ``netns``); returns ``{"holder": pid of unshare, "init": pid of the host's pid 1}``.
    The holder outlives this process (its own session); killing ``init`` ends every process of
    the host, as the kernel does when a PID namespace's init dies."""
    script = (f"mount -t tmpfs -o size={shm_bytes} tmpfs /dev/shm && mount -t sysfs sysfs /sys && "
              f"hostname {hostname} && exec sleep infinity")
    proc = subprocess.Popen(["nsenter", f"--net=/run/netns/{netns}", "unshare", "--fork", "--pid",
                             "--mount", "--uts", "--ipc", "--mount-proc", "--propagation", "private",
                             "sh", "-c", script],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        init = _child_of(proc.pid)
        # Ready once pid 1 is sleep: the tmpfs, sysfs and hostname are in place.
        if init and _comm(init) == "sleep" and in_netns(init, netns):
            return {"holder": proc.pid, "init": init}
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.kill()
    raise NetnsError(f"the holder of host {hostname} did not start (unshare exit {proc.poll()})")


def _child_of(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def in_netns(pid: int, netns: str) -> bool:
    """Whether ``pid`` lives in network namespace ``netns`` (so a recorded holder pid that an
    unrelated process reused after a crash is never entered)."""
    try:
        a, b = os.stat(f"/proc/{pid}/ns/net"), os.stat(f"/run/netns/{netns}")
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


# -- entering a host ---------------------------------------------------------------------------
def enter(init: int, cwd: str, argv: List[str]) -> int:
    """Run ``argv`` on the host whose pid 1 is ``init``, in ``cwd``, with this environment; return
    its exit status (if it was killed, this process then kills itself with the same signal). This
    process stays outside (joining a PID namespace takes effect for children only) and forwards
    SIGTERM/SIGINT/SIGHUP; the child gets SIGKILL when this process dies (PR_SET_PDEATHSIG), so
    killing the launcher's child kills the program."""
    libc = ctypes.CDLL(None, use_errno=True)
    fds = {ns: os.open(f"/proc/{init}/ns/{ns}", os.O_RDONLY) for ns in ENTER_ORDER}
    for ns in ENTER_ORDER:
        if libc.setns(fds[ns], CLONE_FLAG[ns]) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({ns}) into the host of pid {init}: {os.strerror(err)}")
        os.close(fds[ns])
    os.chdir(cwd)
    alive_r, alive_w = os.pipe()            # EOF on alive_r: the parent is gone
    pid = os.fork()
    if pid == 0:
        os.close(alive_w)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if select.select([alive_r], [], [], 0)[0]:     # the parent died before prctl took effect
            os._exit(1)
        os.close(alive_r)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"cannot run {argv[0]!r} on the host: {exc}\n")
            os._exit(127)
    os.close(alive_r)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: os.kill(pid, s))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        # Die of the same signal, so whoever started us sees what the program saw (-9, not 137).
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def find_host(state: dict, name: str) -> dict:
    """The recorded host called ``name`` (its name, or its address as a hostfile lists it)."""
    for host in state["hosts"]:
        if name in (host["name"], host["addr"]):
            return host
    known = ", ".join(f"{h['name']} ({h['addr']})" for h in state["hosts"])
    raise KeyError(f"no host {name!r} in this cluster; it has {known}")


def exec_main(argv: List[str]) -> int:
    """``exec STATE [-x] HOST -- program args...`` runs the program as given; ``exec STATE [-x] HOST
    command line...`` joins the words and runs them with ``sh -c``, as ``ssh HOST words...`` does,
    which is what Hydra's ``-launcher ssh -launcher-exec`` sends (with ssh's ``-x`` first)."""
    import json
    state_file, rest = argv[0], argv[1:]
    while rest and rest[0].startswith("-") and rest[0] != "--":
        rest = rest[1:]                    # ssh options Hydra adds (-x); there is nothing to forward
    if len(rest) < 2:
        sys.stderr.write("usage: cluster exec HOST -- program [args...]  |  "
                         "cluster exec HOST 'command line'\n")
        return 2
    with open(state_file) as f:
        state = json.load(f)
    try:
        host = find_host(state, rest[0])
    except KeyError as exc:
        sys.stderr.write(f"cluster exec: {exc.args[0]}\n")
        return 255                         # ssh's status for "could not reach the host"
    argv = rest[2:] if rest[1] == "--" else ["sh", "-c", " ".join(rest[1:])]
    if not argv:
        sys.stderr.write("cluster exec: no program given after --\n")
        return 2
    if not in_netns(host["init"], host["netns"]):
        sys.stderr.write(f"cluster exec: host {host['name']} has no running holder; "
                         "is the cluster up? (python -m mxref.tools.cluster status)\n")
        return 255
    return enter(host["init"], os.getcwd(), argv)


if __name__ == "__main__":
    # python netns.py exec STATE_FILE [-x] HOST ...  (a fresh, single-threaded process: see enter)
    if len(sys.argv) < 3 or sys.argv[1] != "exec":
        sys.exit("usage: netns.py exec STATE_FILE [-x] HOST [--] command...")
    sys.exit(exec_main(sys.argv[2:]))
