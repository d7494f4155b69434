"""A pytest plugin that makes ``import mxnet`` import mxref: ``mxnet.X`` is the module ``mxref.X``.

Nothing is faked: ``mxnet.X`` resolves only where ``mxref.X`` exists, and it is the same module
object (so ``isinstance`` and module-level state agree between the two names). A name that mxref
lacks fails exactly as a missing module does: ``ModuleNotFoundError: No module named 'mxnet.X'``.
"""
import importlib
import importlib.abc
import importlib.util
import sys

ALIAS, TARGET = "mxnet", "mxref"


class _AliasLoader(importlib.abc.Loader):
    """Hands back the already-imported ``mxref.X`` module as ``mxnet.X``."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module):
        # NOTE: the real module ran its body when ``create_module`` imported it; running it again
        # under the alias would make a second copy of every class.
        # The import system has just set ``__spec__`` to the alias's; put the real one back, or
        # every function-level relative import in mxref warns ``__package__ != __spec__.parent``
        # (an ImportWarning that tests counting warnings would see, and MXNet never raises).
        module.__spec__ = self.real_spec


class MXNetAliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``mxnet`` and ``mxnet.*`` by looking for the same path under ``mxref``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        real = TARGET + fullname[len(ALIAS):]
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return None          # the import fails as any missing module does
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real),
                                               is_package=found.submodule_search_locations is not None)


def install() -> None:
    """Put the alias first on ``sys.meta_path`` (before any ``mxnet`` folder on ``sys.path``)."""
    if not any(isinstance(f, MXNetAliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MXNetAliasFinder())


install()
