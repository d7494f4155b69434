"""What the cluster tests share: the skip marker, and names and addresses of their own.

The names carry a tag (``mxt<NNN>-h0``) and the subnets a block of five (``10.78.<5k..5k+4>.0/24``)
that no link, namespace or route of this machine uses when the session starts. Both start from
this pytest process's id and move on past anything taken, so two test sessions on one machine
(several checkouts tested at once, as root) do not collide, and neither does a session with the
leftovers of one killed before its ``down`` (which ``python -m mxref.tools.cluster down --prefix
mxtNNN-`` removes). None collides with a user's cluster (``mxref-``, 10.77.0.0/24) or the
experiments' (``mxexp-``, 10.77.100.0/24), which live outside ``mxt`` and 10.78.
"""
import ipaddress
import os

import pytest
from mpi_support import HAVE_MPI

from mxref.tools import netns


def _routed_networks() -> list:
    """The destinations of this machine's IPv4 routes, as networks."""
    out = netns.run("ip", "-o", "-4", "route", "show", check=False).stdout
    nets = []
    for line in out.splitlines():
        try:
            nets.append(ipaddress.ip_network(line.split()[0], strict=False))
        except (ValueError, IndexError):
            continue    # 'default' and the like
    return nets


def _free_tag(start: int, names: set) -> str:
    """The first three-digit tag from ``start`` whose ``mxt<tag>`` begins no link or namespace name."""
    for step in range(1000):
        tag = f"{(start + step) % 1000:03d}"
        if not any(name.startswith(f"mxt{tag}") for name in names):
            return tag
    raise RuntimeError("every mxtNNN name is taken on this machine; run 'cluster down' on the leftovers")


def _free_block(start: int, routes: list) -> int:
    """The first block k from ``start`` (of 50) whose five subnets 10.78.<5k+i>.0/24 no route overlaps."""
    for step in range(50):
        k = (start + step) % 50
        if not any(net.overlaps(ipaddress.ip_network(f"10.78.{5 * k + i}.0/24"))
                   for net in routes for i in range(5)):
            return k
    raise RuntimeError("every 10.78.x subnet block is routed on this machine; run 'cluster down' on the "
                       "leftovers")


TAG = _free_tag(os.getpid(), set(netns.link_names()) | set(netns.netns_names()))
PREFIX = f"mxt{TAG}-"
_BLOCK = _free_block(os.getpid(), _routed_networks())


def prefix(kind: str) -> str:
    """A second prefix for a test that makes a cluster of its own (``kind``: one letter)."""
    return f"mxt{TAG}{kind}-"


def subnet(i: int) -> str:
    """The i-th (0..4) subnet of this session."""
    return f"10.78.{_BLOCK * 5 + i}.0/24"


SUBNET = subnet(0)

WHY_NOT = netns.missing_privileges() or (None if HAVE_MPI else "needs mpi4py and mpiexec")
needs_cluster = pytest.mark.skipif(WHY_NOT is not None, reason=f"cluster tests: {WHY_NOT}")
