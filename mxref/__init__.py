"""mxref: MXNet's architecture in readable Python — ``import mxref as mx``."""
from __future__ import annotations

__version__ = "0.1.0"

from . import base, context, engine  # noqa: E402
from .base import MXNetError  # noqa: E402
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus  # noqa: E402
from . import ops  # noqa: E402,F401 - registers every operator
from . import storage  # noqa: E402,F401
from . import ndarray  # noqa: E402
from . import ndarray as nd  # noqa: E402
from . import random  # noqa: E402,F401
from . import profiler  # noqa: E402,F401
from .info import info  # noqa: E402,F401
