"""The package's layers: a module imports only its own layer or lower ones (docs/architecture/overview.md).

The imports are read from the source (``ast``), so the test needs nothing imported. A module-level
import must go down or sideways; an import inside a function may go up only where it is an API
facade listed in ``FACADES`` with its reason (``Symbol.bind`` builds an executor). The layer table
in ``docs/architecture/overview.md`` is checked against ``LAYERS`` so the picture cannot drift.
"""
import ast
import pathlib
import re
from typing import Dict, List, Tuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "mxref"
OVERVIEW = ROOT / "docs" / "architecture" / "overview.md"

# unit (a top-level module or subpackage of mxref) -> floor; 0 is the ground.
LAYERS: Dict[str, int] = {
    # 0: errors, flags, contexts and tiny services everything may use
    "base": 0, "context": 0, "_ext": 0, "profiler": 0, "name": 0, "attribute": 0, "registry": 0,
    "recordio": 0, "util": 0, "numpy": 0, "runtime": 0,
    # 1: the graph IR and the pass registry
    "graph": 1,
    # 2: the dependency engine, memory, and the resources ops write through the engine
    "engine": 2, "storage": 2, "resource": 2,
    # 3: operators (one OpDef each) and their kernels
    "ops": 3,
    # 4: arrays that run operators, and the passes over graphs of operators
    "ndarray": 4, "passes": 4, "random": 4,
    # 5: the two front ends' cores: Symbol, autograd, custom operators
    "symbol": 5, "autograd": 5, "autograd_plain": 5, "autograd_function": 5, "autograd_plan": 5,
    "operator": 5, "operator_numpy": 5,
    # 6: running graphs, and the training pieces that only need arrays
    "executor": 6, "executor_plan": 6, "cached_op": 6, "initializer": 6, "optimizer": 6,
    "lr_scheduler": 6, "metric": 6, "io": 6, "image": 6, "data": 6, "visualization": 6, "test_utils": 6,
    "testing": 6, "op_check": 6,
    "collective": 6, "monitor": 6,
    # 7: stores and the Gluon / model front ends
    "kvstore": 7, "gluon": 7, "model": 7, "parallel": 7, "rnn": 7,
    # 8: Module and its callbacks
    "module": 8, "callback": 8, "contrib": 8,
    # 9: the package face and the tools
    "info": 9, "tools": 9, "__init__": 9,
}

# (importing file, imported unit): why this lazy, upward import is an API facade.
FACADES: Dict[Tuple[str, str], str] = {
    ("mxref/symbol/symbol.py", "executor"): "Symbol.bind / simple_bind build an Executor",
    ("mxref/context.py", "storage"): "Context.empty_cache releases that context's pool",
    ("mxref/ndarray/ndarray.py", "autograd"): "NDArray.attach_grad / backward hand over to autograd",
    ("mxref/initializer.py", "rnn"): "init.FusedRNN unpacks the flat RNN parameters through FusedRNNCell",
}

# The ground floor is stricter: graph/ imports nothing but mxref.base, not even lazily.
GROUND = {"graph": {"base"}}


def _unit_of(path: pathlib.Path) -> str:
    parts = path.relative_to(PKG).with_suffix("").parts
    return parts[0]


def _module_name(path: pathlib.Path) -> List[str]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: pathlib.Path, package: List[str] = None):
    """``(unit, lineno, lazy)`` for every import of an mxref unit in ``path`` (in ``package``)."""
    tree = ast.parse(path.read_text(), str(path))
    if package is None:
        package = _module_name(path)
        if path.name != "__init__.py":
            package = package[:-1]
    top = {id(n) for n in tree.body}
    for block in tree.body:                        # imports under a module-level if/try count as top
        if isinstance(block, (ast.If, ast.Try)):
            top |= {id(n) for n in ast.walk(block)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                names = [".".join(base + [node.module])] if node.module else \
                    [".".join(base + [a.name]) for a in node.names]
            else:
                names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "mxref" and len(parts) > 1:
                yield parts[1], node.lineno, id(node) not in top


def _all_imports():
    for path in sorted(PKG.rglob("*.py")):
        unit = _unit_of(path)
        for target, line, lazy in _imports(path):
            if target != unit:
                yield path, unit, target, line, lazy


def test_every_unit_has_a_floor():
    """A new top-level module or subpackage must be given a floor here (and in overview.md)."""
    units = {_unit_of(p) for p in PKG.rglob("*.py")}
    assert units - set(LAYERS) == set(), "give these a floor in LAYERS and overview.md"


def test_no_module_imports_a_higher_layer():
    """Module-level imports go down or sideways; lazy upward imports are only the listed facades."""
    bad = []
    for path, unit, target, line, lazy in _all_imports():
        if target not in LAYERS:
            continue                                 # e.g. `from mxref import __version__`
        if LAYERS[target] <= LAYERS[unit]:
            continue
        rel = str(path.relative_to(ROOT))
        if lazy and (rel, target) in FACADES:
            continue
        bad.append(f"{rel}:{line} ({unit}, floor {LAYERS[unit]}) imports {target} "
                   f"(floor {LAYERS[target]}){' lazily' if lazy else ''}")
    assert not bad, "imports that run up the layers:\n" + "\n".join(bad)


def test_facades_are_still_there():
    """Every listed facade still exists (a stale entry would hide a future violation)."""
    seen = {(str(p.relative_to(ROOT)), t) for p, _, t, _, lazy in _all_imports() if lazy}
    assert set(FACADES) <= seen, sorted(set(FACADES) - seen)


@pytest.mark.parametrize("unit", sorted(GROUND))
def test_ground_floor_imports_only_base(unit):
    """``mxref/graph`` stands on ``mxref.base`` alone, so every layer above can use it."""
    found = {t for p, u, t, _, _ in _all_imports() if u == unit}
    assert found <= GROUND[unit], f"{unit} imports {sorted(found - GROUND[unit])}"


def test_overview_table_matches_layers():
    """docs/architecture/overview.md's layer table lists exactly the floors above."""
    rows = re.findall(r"^\|\s*(\d+)\s*\|([^|]+)\|", OVERVIEW.read_text(), re.M)
    documented = {}
    for floor, cell in rows:
        for name in re.findall(r"`([a-z_]+)`", cell):
            documented[name] = int(floor)
    assert documented == LAYERS


def test_the_checker_sees_a_violation(tmp_path):
    """The import reader itself works: upward imports written in a file of ops/ are found."""
    probe = tmp_path / "probe.py"
    probe.write_text("from ..symbol import Symbol\n\ndef f():\n    from .. import executor\n")
    found = list(_imports(probe, package=["mxref", "ops"]))
    assert ("symbol", 1, False) in found and ("executor", 4, True) in found
