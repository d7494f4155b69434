"""NDArray: an n-dimensional array whose every operation is an engine operation (``mx.nd``).

Layout: ``chunk.py`` (memory + engine variable), ``ndarray.py`` (the class, views, operators),
``indexing.py`` (copying indexing, slice assignment), ``invoke_plain.py`` (running an operator,
the reference steps), ``imperative.py`` (the same, tuned; the switch between the two),
``register.py`` (the generated ``mx.nd.<op>`` functions), ``utils.py`` (creation), ``io.py``
(MXNet's binary save/load), ``random.py`` (``mx.nd.random``), ``sparse.py`` (``mx.nd.sparse``:
csr and row_sparse arrays; their constructors in ``sparse_create.py``) and
``storage_dispatch.py`` (sparse kernels or the dense fallback).
"""
from __future__ import annotations

import sys

from ..ops import registry as _registry
from . import methods as _methods  # noqa: F401 - binds op-backed NDArray methods
from . import random, sparse
from .imperative import is_training, set_is_training
from .io import load, load_frombuffer, save, save_tobuffer
from .ndarray import NDArray
from .register import make_function as _make_function
from .register import namespace_of as _namespace_of
from .register import populate as _populate
from .ufunc import *  # noqa: F403 - add, subtract, maximum, greater, ... (ufunc.__all__)
from .ufunc import __all__ as _ufunc_names
from .utils import arange, array, empty, eye, full, ones, ones_like, waitall, zeros, zeros_like

__all__ = ["NDArray", "random", "sparse", "is_training", "set_is_training", "load", "load_frombuffer", "save",
           "save_tobuffer", "arange", "array", "empty", "eye", "full", "ones", "ones_like", "waitall",
           "zeros", "zeros_like", *_ufunc_names]
# ... plus one generated function per registered operator (register.populate below).

_populate(sys.modules[__name__])

# control flow: Python loops over NDArrays (mxref/ndarray/control_flow.py)
from . import control_flow as _control_flow  # noqa: E402

for _fn in (_control_flow.foreach, _control_flow.while_loop, _control_flow.cond):
    setattr(sys.modules[__name__].contrib, _fn.__name__, _fn)   # contrib is made by _populate

# mx.nd.contrib's Python-level samplers (rand_zipfian) beside the generated contrib operators.
from . import contrib_sampling as _contrib_sampling  # noqa: E402

_contrib_sampling.install(sys.modules[__name__])


def __getattr__(name: str):
    """Operators registered after import (plugins, tests) still appear as ``mx.nd.<name>``."""
    if _registry.exists(name) and _namespace_of(name)[0] == "op":
        fn = _make_function(_registry.get(name), name)
        globals()[name] = fn
        return fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# Array functions over one operator (linspace, moveaxis, histogram, split_v2) and the NDArray form
# of contrib.boolean_mask, which reads the mask to size its output.
from . import array_funcs as _array_funcs  # noqa: E402
from .array_funcs import histogram, linspace, moveaxis, split_v2  # noqa: E402

__all__ += ["histogram", "linspace", "moveaxis", "split_v2"]
sys.modules[__name__].contrib.boolean_mask = _array_funcs.boolean_mask   # contrib: made by _populate

# Memory shared with numpy / DLPack, and MXNet's pickle state (mxref/ndarray/interop.py).
from .interop import from_dlpack, from_numpy, to_dlpack_for_read, to_dlpack_for_write  # noqa: E402

__all__ += ["from_dlpack", "from_numpy", "to_dlpack_for_read", "to_dlpack_for_write"]

# MXNet's Python-level helpers over operators (mxref/ndarray/legacy_funcs.py).
from . import legacy_funcs as _legacy_funcs  # noqa: E402
from .legacy_funcs import concatenate, onehot_encode  # noqa: E402

__all__ += ["concatenate", "onehot_encode"]
for _fn in (_legacy_funcs.isinf, _legacy_funcs.isfinite, _legacy_funcs.isnan):
    setattr(sys.modules[__name__].contrib, _fn.__name__, _fn)   # contrib: made by _populate
