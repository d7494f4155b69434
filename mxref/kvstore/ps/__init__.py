"""The distributed kvstores: a parameter server (``dist_sync``, ``dist_async``, ``dist_ssp``) and allreduce.

Layout: ``roles.py`` (which ranks serve), ``placement.py`` (keys to servers by size),
``comm.py`` (the one thread per process that owns its ``Link``), ``server.py`` (store, merge,
update), ``consistency/`` (the models, one file each, registered by name), ``worker.py`` (the
store types), ``runtime.py`` (a worker's role, link and thread), ``inprocess.py`` (a whole job
as threads of one process). ``docs/architecture/kvstore_dist.md`` describes the protocol.
``allreduce.py`` holds ``dist_sync_allreduce``, which has no servers (``mxref.collective``).
Both speak through the ``Link`` of ``mxref.collective.base`` (MPI, TCP or in-process).
"""
from .allreduce import AllreduceKVStore
from .placement import Part, Placement
from .roles import Roles, assign_roles
from .worker import DistAsyncKVStore, DistKVStore, DistSSPKVStore, create

__all__ = ["DistKVStore", "DistAsyncKVStore", "DistSSPKVStore", "create", "Placement", "Part",
           "Roles", "assign_roles", "AllreduceKVStore"]
