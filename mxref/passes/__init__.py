"""Graph passes: infer_shape, infer_type, gradient, plan_memory, mirror (one file each).

Importing this package registers every pass (``base.list_passes()``); it never imports Symbol or
the executor, which build on it.
"""
import importlib
import pkgutil

from . import base  # noqa: F401


def _import_all() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")


_import_all()
