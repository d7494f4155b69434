"""mxref: MXNet's architecture in readable Python — ``import mxref as mx``.

The subpackages import only their own layer or lower ones (``docs/architecture/overview.md``), so
the imports below may come in any order; they are sorted. ``mx.test_utils`` is imported on first
use, so ``import mxref`` does not load the test tooling.
"""
from __future__ import annotations

import importlib as _importlib

from . import (
    attribute,
    autograd,
    base,
    callback,
    collective,
    context,
    contrib,
    engine,
    executor,
    gluon,
    graph,
    image,
    initializer,
    io,
    kvstore,
    lr_scheduler,
    metric,
    model,
    module,
    monitor,
    name,
    ndarray,
    operator,
    ops,
    optimizer,
    parallel,
    passes,
    profiler,
    random,
    recordio,
    registry,
    rnn,
    runtime,
    storage,
    symbol,
    util,
    visualization,
)
from . import image as img
from . import initializer as init
from . import kvstore as kv
from . import module as mod
from . import monitor as mon
from . import ndarray as nd
from . import symbol as sym
from . import visualization as viz
from .attribute import AttrScope
from .base import MXNetError
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from .info import info
from .symbol import Symbol
from .util import (
    is_np_array,
    is_np_shape,
    np_array,
    np_shape,
    set_np_shape,
    use_np,
    use_np_array,
    use_np_shape,
)

__version__ = "0.1.0"

_LAZY_SUBMODULES = ("test_utils",)


def __getattr__(attr: str):
    """``mx.test_utils`` without importing it at ``import mxref`` time (MXNet's scripts use it)."""
    if attr in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{attr}")
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
