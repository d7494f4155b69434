"""Hostfiles (MPICH Hydra's ``host[:slots]`` lines) and the cluster note ``cluster up`` adds to its own.

A hostfile written by ``python -m mxref.tools.cluster up`` carries a comment line
``# mxref-cluster state=PATH``; Hydra skips comments, and the launcher reads it to know that the
hosts are namespaces of this machine (entered with the cluster's launcher-exec script, reached
through its bridge). Any other hostfile names real machines, reached by ssh.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

MARKER = "# mxref-cluster state="


@dataclass
class Hostfile:
    hosts: List[Tuple[str, int]] = field(default_factory=list)     # (host, slots) in file order
    cluster_state: Optional[str] = None                             # the cluster's state file

    def placement(self, n: int) -> List[str]:
        """The host of each of ``n`` ranks, as Hydra places them: fill each host's slots in file
        order, then start over from the first host."""
        order = [h for h, slots in self.hosts for _ in range(slots)]
        return [order[i % len(order)] for i in range(n)]

    def cluster(self) -> Optional[dict]:
        """The cluster's recorded state, or None for a hostfile of real machines."""
        if self.cluster_state is None:
            return None
        try:
            with open(self.cluster_state) as f:
                return json.load(f)
        except OSError as exc:
            raise ValueError(f"the hostfile names cluster state {self.cluster_state}, which cannot be "
                             f"read ({exc.strerror}): is the cluster up? (python -m mxref.tools.cluster "
                             "status)") from None


def read(path: str) -> Hostfile:
    """Parse ``path``; a bad line raises ValueError naming the file and line."""
    out = Hostfile()
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            if raw.startswith(MARKER):
                out.cluster_state = raw[len(MARKER):].split()[0]
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            host, _, slots = line.partition(":")
            try:
                count = int(slots) if slots else 1
            except ValueError:
                count = 0
            if not host or count < 1:
                raise ValueError(f"{path}:{lineno}: expected 'host' or 'host:slots' (slots >= 1), "
                                 f"got {line!r}")
            out.hosts.append((host, count))
    if not out.hosts:
        raise ValueError(f"hostfile {path} lists no hosts")
    return out


def write(path: str, hosts: List[Tuple[str, int]], state: Optional[str] = None,
          comments: Tuple[str, ...] = ()) -> None:
    with open(path, "w") as f:
        if state is not None:
            f.write(f"{MARKER}{state}\n")
        for line in comments:
            f.write(f"# {line}\n")
        for host, slots in hosts:
            f.write(f"{host}:{slots}\n")
