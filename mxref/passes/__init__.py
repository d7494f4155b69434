"""Graph passes: infer_shape, infer_type, gradient, plan_memory, mirror, count_flops,
eliminate_common_expr, ... (one file each).

Importing this package registers every pass with the pass registry of ``mxref.graph``
(``mxref.graph.list_passes()``). Passes stand on the graph IR and the operator registry only; they
never import Symbol or the executor, which build on them (a test in ``tests/test_layers.py`` checks).
"""
import importlib
import pkgutil


def _import_all() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        importlib.import_module(f"{__name__}.{info.name}")


_import_all()
