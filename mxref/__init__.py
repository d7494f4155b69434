"""mxref: MXNet's architecture in readable Python — ``import mxref as mx``."""
from __future__ import annotations

__version__ = "0.1.0"

# The order matters: operators register before the nd/sym wrappers are generated from them.
from . import base, context, engine  # noqa: E402
from .base import MXNetError  # noqa: E402
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus  # noqa: E402
from . import ops  # noqa: E402,F401 - registers every operator
from . import storage  # noqa: E402,F401
from . import ndarray  # noqa: E402
from . import ndarray as nd  # noqa: E402
from . import random  # noqa: E402,F401
from . import io, recordio  # noqa: E402,F401
from . import profiler  # noqa: E402,F401
from . import name  # noqa: E402,F401
from . import attribute  # noqa: E402,F401
from .attribute import AttrScope  # noqa: E402,F401
from . import symbol  # noqa: E402
from . import symbol as sym  # noqa: E402,F401
from .symbol import Symbol  # noqa: E402,F401
from . import passes  # noqa: E402,F401 - registers every graph pass
from . import autograd  # noqa: E402,F401
from . import executor  # noqa: E402,F401
from . import test_utils  # noqa: E402,F401
from . import operator  # noqa: E402,F401
from . import visualization  # noqa: E402,F401
from . import visualization as viz  # noqa: E402,F401
from . import registry  # noqa: E402,F401
from . import lr_scheduler  # noqa: E402,F401
from . import optimizer  # noqa: E402,F401
from . import kvstore  # noqa: E402,F401
from . import kvstore as kv  # noqa: E402,F401
from . import initializer  # noqa: E402
from . import initializer as init  # noqa: E402,F401
from . import metric  # noqa: E402,F401
from . import gluon  # noqa: E402,F401
from . import collective  # noqa: E402,F401
from . import model  # noqa: E402,F401
from . import callback  # noqa: E402,F401
from . import module  # noqa: E402,F401
from . import module as mod  # noqa: E402,F401
from .info import info  # noqa: E402,F401

symbol._init_symbol_module()
