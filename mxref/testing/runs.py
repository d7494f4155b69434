"""How tests run: retrying stochastic tests, and which optional kernels a test may count on."""
from __future__ import annotations

import functools
import os

from ..context import current_context
from ..ndarray.utils import waitall


def retry(n: int):
    """Decorator: run a stochastic test up to ``n`` times; it fails only if every run fails."""
    assert n > 0

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
                    waitall()
        return wrapper
    return decorate


def has_tvm_ops() -> bool:
    """Whether TVM-generated operators exist: never in mxref (MXNet's ``USE_TVM_OP`` build)."""
    return False


def is_op_runnable() -> bool:
    """Whether the current context runs every operator: MXNet said no only for TVM operators on old
    GPUs; mxref has no TVM operators, so always."""
    current_context()
    return True


def is_cd_run() -> bool:
    """Whether this is a continuous-delivery run (``CD_JOB=1``), where MXNet skips some tests."""
    return os.environ.get("CD_JOB", "0") == "1"
