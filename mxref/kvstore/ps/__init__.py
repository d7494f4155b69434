"""The distributed kvstore: a parameter server over MPI (``dist_sync``, ``dist_async``, ``dist_ssp``).

Layout: ``roles.py`` (which MPI ranks serve), ``placement.py`` (keys to servers by size),
``comm.py`` (the one thread per process that owns MPI), ``server.py`` (merge, update, consistency),
``worker.py`` (the store types). ``docs/architecture/kvstore_dist.md`` describes the protocol.
``allreduce.py`` holds ``dist_sync_allreduce``, which has no servers (``mxref.collective``).
"""
from .allreduce import AllreduceKVStore
from .placement import Part, Placement
from .roles import Roles, assign_roles
from .worker import DistAsyncKVStore, DistKVStore, DistSSPKVStore, create

__all__ = ["DistKVStore", "DistAsyncKVStore", "DistSSPKVStore", "create", "Placement", "Part",
           "Roles", "assign_roles", "AllreduceKVStore"]
