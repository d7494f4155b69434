"""The parameter server's consistency models, one file each, registered by name (``base.py``).

``sync.py`` (BSP, ``dist_sync``), ``asynchronous.py`` (ASP, ``dist_async``), ``ssp.py`` (bounded
delay, ``dist_ssp`` / ``dist_ssp:tau``). Importing this package registers all three.
"""
from . import asynchronous, ssp, sync  # noqa: F401 - registers the models
from .base import (
    Consistency,
    PartContext,
    consistency_names,
    get_consistency,
    model_for_store,
    register_consistency,
)

__all__ = ["Consistency", "PartContext", "register_consistency", "get_consistency",
           "consistency_names", "model_for_store"]
