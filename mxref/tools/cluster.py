"""A cluster on one machine: ``python -m mxref.tools.cluster up -n H [--bandwidth 1gbit] --hostfile FILE``.

``up`` makes H hosts ``mxref-h0 .. mxref-h{H-1}``: each a network namespace with its own UTS,
IPC, mount (a private ``/dev/shm``) and PID namespaces (``netns.py`` says why all five), joined
to a bridge ``mxref-br`` in the root namespace by one veth, with a token-bucket bandwidth limit
on both directions of its link. It writes a hostfile that MPICH's ``mpiexec -f`` and
``python -m mxref.tools.launch --hostfile`` accept, and prints the hosts. Then::

    python -m mxref.tools.cluster status              # hosts, links, limits, bytes on each link
    python -m mxref.tools.cluster link mxref-h1 down  # a partition (and ``up`` to heal it)
    python -m mxref.tools.cluster limit mxref-h1 100mbit
    python -m mxref.tools.cluster exec mxref-h0 -- python train.py
    python -m mxref.tools.cluster down                # removes everything ``up`` made

Every name it makes starts with ``--prefix`` (``mxref-``) and every address lies in ``--subnet``
(``10.77.0.0/24``; the bridge is ``.1``, host i is ``.(i+2)``), so traffic stays between these
namespaces and the bridge. What ``up`` makes is recorded in ``STATE_DIR/cluster.json``
(``--state-dir``, ``MXREF_CLUSTER_DIR``, default ``/run/mxref-cluster``) *before* it is made, so
``down`` also cleans up after a crash; it also sweeps namespaces and links with the recorded
prefix that the record missed (``down --prefix P`` sweeps a prefix whose record is lost).
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import List, Optional

from mxref.tools import hostfile, netns

DEFAULT_DIR = "/run/mxref-cluster"
INNER = "eth"          # the host-side interface is PREFIX + "eth" in every host (e.g. mxref-eth)
IFNAMSIZ = 15


class ClusterError(RuntimeError):
    """A cluster command cannot do what was asked (the message says why and what to do)."""


def state_dir(arg: Optional[str] = None) -> Path:
    return Path(arg or os.environ.get("MXREF_CLUSTER_DIR") or DEFAULT_DIR)


def state_path(folder: Path) -> Path:
    return folder / "cluster.json"


def load(folder: Path) -> Optional[dict]:
    try:
        return json.loads(state_path(folder).read_text())
    except FileNotFoundError:
        return None


def save(folder: Path, state: dict) -> None:
    # Only the owner may write here: the exec script in it is run as root by mpiexec and launch.
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = state_path(folder).with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, state_path(folder))        # atomic: a crash leaves the old or the new record


def mpi_env(state: dict) -> dict:
    """What an MPI job on the cluster needs in its environment: UCX (the MPICH wheel's netmod) and
    libfabric (MPICH's other one) on TCP over the host's interface, so neither probes shared
    memory, which the hosts do not share."""
    return {"FI_PROVIDER": "tcp", "FI_TCP_IFACE": state["iface"], "UCX_TLS": "tcp,self",
            "UCX_NET_DEVICES": state["iface"]}


def mpiexec_options(state: dict) -> List[str]:
    """Hydra's options for the cluster: start proxies through the exec script, and have them reach
    mpiexec on the bridge address (else they try this machine's hostname)."""
    return ["-launcher", "ssh", "-launcher-exec", state["exec"], "-iface", state["bridge"]]


def _plan(n: int, prefix: str, subnet: str, rate: Optional[int], folder: Path) -> dict:
    if n < 1:
        raise ClusterError("need -n >= 1 hosts")
    if not re.fullmatch(r"[a-z][a-z0-9-]*", prefix):
        raise ClusterError(f"--prefix {prefix!r}: use lower-case letters, digits and '-'")
    longest = max(f"{prefix}h{n - 1}", f"{prefix}br", f"{prefix}{INNER}", key=len)
    if len(longest) > IFNAMSIZ:
        raise ClusterError(f"interface name {longest!r} is longer than {IFNAMSIZ} characters; "
                           "use a shorter --prefix")
    try:
        net = ipaddress.ip_network(subnet, strict=True)
    except ValueError as exc:
        raise ClusterError(f"--subnet {subnet!r}: {exc}") from None
    if net.version != 4 or not net.is_private or net.num_addresses < n + 4:
        raise ClusterError(f"--subnet {subnet}: need a private IPv4 network with room for the bridge "
                           f"and {n} hosts")
    clash = _routed_overlap(net)
    if clash:
        raise ClusterError(f"--subnet {subnet} overlaps the route '{clash}' of this machine; "
                           "choose a subnet nothing else uses")
    addrs = list(net.hosts())
    return {"prefix": prefix, "subnet": str(net), "prefix_len": net.prefixlen,
            "bridge": f"{prefix}br", "bridge_addr": str(addrs[0]), "iface": f"{prefix}{INNER}",
            "rate": rate, "state_dir": str(folder), "exec": str(folder / "exec"), "hostfile": None,
            "complete": False,
            "hosts": [{"name": f"{prefix}h{i}", "netns": f"{prefix}h{i}", "veth": f"{prefix}h{i}",
                       "addr": str(addrs[i + 1]), "holder": 0, "init": 0, "rate": rate, "link": "up"}
                      for i in range(n)]}


def _routed_overlap(net) -> Optional[str]:
    """A route of the root namespace whose destination overlaps ``net`` (our own bridge's excepted)."""
    out = netns.run("ip", "-o", "-4", "route", "show", check=False).stdout
    for line in out.splitlines():
        dst = line.split()[0]
        if dst == "default":
            continue
        try:
            other = ipaddress.ip_network(dst, strict=False)
        except ValueError:
            continue
        if other.overlaps(net):
            return line.strip()
    return None


def _exec_script(state: dict) -> str:
    return ("#!/bin/sh\n"
            "# Hydra's -launcher-exec for this cluster: ssh-style 'exec [-x] HOST command line', or\n"
            "# 'exec HOST -- program args' (the robust launcher). netns.py imports only the stdlib.\n"
            f"exec {sys.executable} {Path(netns.__file__).resolve()} exec "
            f"{state_path(Path(state['state_dir']))} \"$@\"\n")


def up(n: int, hostfile_path: str, bandwidth: str = "unlimited", subnet: str = "10.77.0.0/24",
       prefix: str = "mxref-", folder: Optional[Path] = None, slots: int = 1) -> dict:
    """Make the cluster (see the module docstring); on any failure undo what was made, then raise."""
    why = netns.missing_privileges()
    if why:
        raise ClusterError(why)
    folder = state_dir(folder)
    if load(folder) is not None:
        raise ClusterError(f"a cluster is already up (state in {state_path(folder)}); "
                           "run 'python -m mxref.tools.cluster down' first")
    try:
        rate = netns.parse_rate(bandwidth)
    except ValueError as exc:
        raise ClusterError(str(exc)) from None
    state = _plan(n, prefix, subnet, rate, folder)
    existing = set(netns.netns_names()) | set(netns.link_names())
    taken = existing & ({h["netns"] for h in state["hosts"]} | {state["bridge"]})
    if taken:
        raise ClusterError(f"{sorted(taken)} already exist but no cluster is recorded in {folder}: "
                           "run 'down' with the --state-dir (or --prefix) that made them")
    state["hostfile"] = str(Path(hostfile_path).resolve())
    save(folder, state)                        # recorded before anything exists: down can undo it all
    try:
        netns.make_bridge(state["bridge"], state["bridge_addr"], state["prefix_len"])
        for host in state["hosts"]:
            netns.make_host_link(host["netns"], host["veth"], state["iface"], state["bridge"],
                                 host["addr"], state["prefix_len"])
            netns.set_limit(host["netns"], host["veth"], state["iface"], rate)
            host.update(netns.start_holder(host["netns"], host["name"]))
            save(folder, state)
        Path(state["exec"]).write_text(_exec_script(state))
        os.chmod(state["exec"], 0o755)
        hostfile.write(state["hostfile"], [(h["addr"], slots) for h in state["hosts"]],
                       state=str(state_path(folder)),
                       comments=("hosts " + ", ".join(f"{h['name']}={h['addr']}" for h in state["hosts"]),
                                 "mpiexec -f THIS " + " ".join(mpiexec_options(state)) + "  with "
                                 + " ".join(f"{k}={v}" for k, v in mpi_env(state).items())))
        state["complete"] = True
        save(folder, state)
    except BaseException:
        down(folder)
        raise
    return state


def down(folder: Optional[Path] = None, prefix: Optional[str] = None) -> List[str]:
    """Remove every host, link and the bridge (idempotent); returns what it removed."""
    folder = state_dir(folder)
    state = load(folder)
    # Without a record only an explicit --prefix is swept: another state dir may own a cluster
    # with the default names.
    prefix = prefix or (state or {}).get("prefix")
    if prefix is None:
        return []
    removed = []
    names = {h["netns"] for h in (state or {}).get("hosts", [])}
    ours = re.compile(re.escape(prefix) + r"h\d+")
    names |= {ns for ns in netns.netns_names() if ours.fullmatch(ns)}
    for ns in sorted(names):
        # Every process in the namespace is on one of our hosts: the holders, and what ran there.
        pids = netns.run("ip", "netns", "pids", ns, check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    links = set(netns.link_names())
    for name in sorted(names | {f"{prefix}br"}):
        if name in links:
            netns.delete_link(name)
            removed.append(f"link {name}")
    for ns in sorted(names):
        if ns in netns.netns_names():
            netns.delete_netns(ns)
            removed.append(f"netns {ns}")
    if state is not None:
        exec_script = Path(state["exec"])
        if exec_script.exists():
            exec_script.unlink()
        state_path(folder).unlink()
    return removed


def _require(folder: Optional[Path]) -> dict:
    state = load(state_dir(folder))
    if state is None:
        raise ClusterError(f"no cluster is up (no {state_path(state_dir(folder))}); "
                           "start one with 'python -m mxref.tools.cluster up -n 2 --hostfile hosts.txt'")
    return state


def set_link(host_name: str, up_: bool, folder: Optional[Path] = None) -> dict:
    state = _require(folder)
    host = netns.find_host(state, host_name)
    netns.set_link(host["veth"], up_)
    host["link"] = "up" if up_ else "down"
    save(state_dir(folder), state)
    return host


def set_limit(host_name: str, bandwidth: str, folder: Optional[Path] = None) -> dict:
    state = _require(folder)
    host = netns.find_host(state, host_name)
    host["rate"] = netns.parse_rate(bandwidth)
    netns.set_limit(host["netns"], host["veth"], state["iface"], host["rate"])
    save(state_dir(folder), state)
    return host


def link_bytes(state: dict) -> dict:
    """``{host name: {"sent": bytes, "received": bytes}}`` from the counters of each host's link."""
    return {h["name"]: netns.counters(h["veth"]) for h in state["hosts"]}


def _rate_text(rate: Optional[int]) -> str:
    if not rate:
        return "unlimited"
    for unit, mult in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if rate >= mult:
            return f"{rate / mult:g}{unit}"
    return f"{rate}bit"


def describe(state: dict) -> str:
    rows = [f"cluster {state['prefix']}: bridge {state['bridge']} {state['bridge_addr']}, hostfile "
            f"{state['hostfile']}", f"{'host':<12}{'address':<15}{'link':<6}{'limit':<11}{'holder':<8}"
            f"{'sent':>14}{'received':>14}"]
    for h in state["hosts"]:
        alive = "up" if netns.in_netns(h["init"], h["netns"]) else "gone"
        try:
            c = netns.counters(h["veth"])
        except OSError:
            c = {"sent": -1, "received": -1}
        rows.append(f"{h['name']:<12}{h['addr']:<15}{h['link']:<6}{_rate_text(h['rate']):<11}{alive:<8}"
                    f"{c['sent']:>14}{c['received']:>14}")
    return "\n".join(rows)


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m mxref.tools.cluster", description=__doc__.split("\n")[0])
    p.add_argument("--state-dir", default=None,
                   help=f"where the record lives (MXREF_CLUSTER_DIR, {DEFAULT_DIR})")
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="make the hosts and write the hostfile")
    u.add_argument("-n", "--num-hosts", type=int, required=True)
    u.add_argument("--bandwidth", default="unlimited", help="per-host link limit: 100mbit, 1gbit, unlimited")
    u.add_argument("--subnet", default="10.77.0.0/24")
    u.add_argument("--prefix", default="mxref-", help="start of every namespace and link name")
    u.add_argument("--slots", type=int, default=1, help="processes per host before the next (round-robin: 1)")
    u.add_argument("--hostfile", required=True)
    d = sub.add_parser("down", help="remove everything up made")
    d.add_argument("--prefix", default=None, help="also sweep names with this prefix (default: the record's)")
    sub.add_parser("status", help="hosts, links, limits and byte counters")
    ln = sub.add_parser("link", help="take a host's link down (a partition) or up")
    ln.add_argument("host")
    ln.add_argument("state", choices=["up", "down"])
    lim = sub.add_parser("limit", help="change a host's bandwidth limit")
    lim.add_argument("host")
    lim.add_argument("rate")
    sub.add_parser("exec", help="run a command on a host: exec HOST -- prog args, or ssh-style "
                   "exec [-x] HOST 'command line' (Hydra's -launcher-exec)")
    argv = list(sys.argv[1:] if argv is None else argv)
    # exec's words are a command line, ssh options included (Hydra sends -x): not argparse's.
    for i, word in enumerate(argv):
        if word == "exec":
            args = p.parse_args(argv[:i + 1])
            args.words = argv[i + 1:]
            return args
        if not word.startswith("-") and (i == 0 or argv[i - 1] != "--state-dir"):
            break
    return p.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = _parse(argv)
    folder = state_dir(args.state_dir)
    try:
        if args.cmd == "exec":
            state = _require(folder)
            # A fresh interpreter that imports nothing but the stdlib: setns into a mount namespace
            # needs a single-threaded process.
            os.execv(sys.executable, [sys.executable, netns.__file__, "exec",
                                      str(state_path(Path(state["state_dir"]))), *args.words])
        if args.cmd == "up":
            state = up(args.num_hosts, args.hostfile, args.bandwidth, args.subnet, args.prefix, folder,
                       args.slots)
            print(describe(state))
            print(f"hostfile {state['hostfile']}: python -m mxref.tools.launch -n W -s S --hostfile "
                  f"{args.hostfile} -- python train.py")
        elif args.cmd == "down":
            removed = down(folder, args.prefix)
            print("removed " + (", ".join(removed) if removed else "nothing"))
        elif args.cmd == "status":
            print(describe(_require(folder)))
        elif args.cmd == "link":
            host = set_link(args.host, args.state == "up", folder)
            print(f"{host['name']} link {host['link']}")
        elif args.cmd == "limit":
            host = set_limit(args.host, args.rate, folder)
            print(f"{host['name']} limit {_rate_text(host['rate'])}")
    except (ClusterError, netns.NetnsError, KeyError, ValueError) as exc:
        print(f"cluster {args.cmd}: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
