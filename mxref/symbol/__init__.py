"""Symbolic graphs: ``Symbol``, the graph IR, MXNet-compatible JSON and the ``mx.sym.<op>`` functions.

Operator functions are generated from the registry by ``register.populate``; ones registered
later are generated on first access through this module's ``__getattr__``.
"""
from . import register as _register
from .creation import arange, eye, full, ones, zeros
from .register import NAMESPACES as _NAMESPACES
from .symbol import Group, Symbol, Variable, load, load_json, var

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "zeros", "ones", "full", "arange",
           "eye"]

_register.populate(globals())
op = _NAMESPACES["op"]
_internal = _NAMESPACES["_internal"]
contrib = _NAMESPACES["contrib"]
linalg = _NAMESPACES["linalg"]
sparse = _NAMESPACES["sparse"]
image = _NAMESPACES["image"]
random = _NAMESPACES["random"]

# control flow traced into subgraphs (mxref/symbol/control_flow.py)
from . import control_flow as _control_flow  # noqa: E402

for _fn in (_control_flow.foreach, _control_flow.while_loop, _control_flow.cond):
    setattr(contrib, _fn.__name__, _fn)

# mx.sym.contrib's Python-level samplers (rand_zipfian) beside the generated contrib operators.
from .contrib_sampling import rand_zipfian as _rand_zipfian  # noqa: E402

contrib.rand_zipfian = _rand_zipfian


def _init_symbol_module() -> None:
    """Generate functions for every operator registered so far; ``mxref/__init__`` calls it last."""
    _register.populate(globals())


def __getattr__(attr_name: str):
    if attr_name.startswith("__"):
        raise AttributeError(attr_name)
    try:
        fn = _register._lookup("op", attr_name)
    except AttributeError:
        raise AttributeError(f"module 'mxref.symbol' has no attribute {attr_name!r}") from None
    globals()[attr_name] = fn
    return fn

# Symbol functions over one operator: linspace, histogram, split_v2.
from .array_funcs import histogram, linspace, split_v2  # noqa: E402

__all__ += ["histogram", "linspace", "split_v2"]

# Binary functions of Symbols or numbers: pow, power, maximum, minimum, hypot.
from .ufunc import hypot, maximum, minimum, pow, power  # noqa: E402, A004

__all__ += ["pow", "power", "maximum", "minimum", "hypot"]
