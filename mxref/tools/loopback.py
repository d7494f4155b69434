"""Keep every listener of a single-host MPI job on 127.0.0.1: mpiexec's flags, the environment
for the MPI libraries, and the bind shim for MPICH's process manager.

What listens where in an ``mpiexec -n N`` job on one host, and what sets it:

* each rank's libfabric endpoint: ``FI_TCP_IFACE=lo``;
* each rank's UCX endpoints (MPICH's default netmod): ``UCX_NET_DEVICES=lo`` (without it, every
  rank also listens on the host's external interface);
* hydra's control port (mpiexec; its proxies and the ranks inherit the socket): bound to
  ``INADDR_ANY`` in hydra's code, which no flag or variable changes, so the launcher preloads
  ``mxref/_ext/loopback_bind*.so`` (``LD_PRELOAD``), which turns a bind to 0.0.0.0 or :: into one
  to 127.0.0.1 or ::1. ``-localhost 127.0.0.1`` makes the proxies connect back there.

``MXREF_LOOPBACK_SHIM=0`` leaves the shim out (hydra's port then listens on every interface).
A job with a hostfile uses none of this: its ranks must be reachable from the other hosts.
"""
from __future__ import annotations

import glob
import os
from typing import Dict, List, Mapping, Optional

__all__ = ["MPIEXEC_FLAGS", "shim_path", "loopback_env"]

# -launcher fork: start the ranks here (no ssh); -iface lo: hydra hands the ranks loopback as
# the interface to use; -localhost: the address the proxies dial back to mpiexec on.
MPIEXEC_FLAGS: List[str] = ["-launcher", "fork", "-iface", "lo", "-localhost", "127.0.0.1"]


def shim_path() -> Optional[str]:
    """The built bind shim, or None (not built: ``python setup.py build_ext --inplace``)."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_ext")
    found = sorted(glob.glob(os.path.join(here, "loopback_bind*.so")))
    return found[0] if found else None


def loopback_env(env: Mapping[str, str]) -> Dict[str, str]:
    """``env`` plus what keeps the MPI libraries and hydra on loopback (explicit settings win)."""
    out = dict(env)
    out.setdefault("FI_TCP_IFACE", "lo")
    out.setdefault("UCX_NET_DEVICES", "lo")
    shim = shim_path()
    if shim:
        preload = [p for p in out.get("LD_PRELOAD", "").split(":") if p and p != shim]
        if out.get("MXREF_LOOPBACK_SHIM", "1") != "0":
            preload.insert(0, shim)
        if preload:
            out["LD_PRELOAD"] = ":".join(preload)
        else:
            out.pop("LD_PRELOAD", None)
    return out
