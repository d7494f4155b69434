"""Operators: ``registry`` holds one ``OpDef`` per operator; importing this package registers them all.

Every module in this package (and in its sub-packages, e.g. ``ops/nn``) is imported here, so adding
an operator is adding one file: nothing else needs editing.
"""
import importlib
import pkgutil

from . import registry  # noqa: F401


def _import_all() -> None:
    for info in sorted(pkgutil.walk_packages(__path__, prefix=__name__ + "."), key=lambda i: i.name):
        if info.name != __name__ + ".registry":
            importlib.import_module(info.name)


_import_all()
