"""The tensor operator tests' spelling of the harness in ``mxref.op_check`` (parameters as keyword
arguments): run one op's kernel; check its gradient graph numerically."""
from __future__ import annotations

from typing import List

import numpy as np

import mxref.ops  # noqa: F401  (registers every operator)
from mxref import op_check


def run_op(name: str, *arrays, seed: int = 0, req: str = "write", out=None, **params) -> List[np.ndarray]:
    """Parse ``params``, infer output shapes and dtypes, allocate outputs, call the kernel."""
    return op_check.run_op(name, arrays, params, seed=seed, req=req, out=out)


def grad_op(name: str, *arrays, ograds=None, **params) -> List:
    """Gradients of every input of op ``name`` from its gradient graph, given head gradients
    (ones by default)."""
    if ograds is None:
        ograds = [np.ones_like(o) for o in run_op(name, *arrays, **params)]
    return op_check.grads(name, [np.asarray(a) for a in arrays], params, ograds, is_train=False)


def check_numeric_grad(name: str, *arrays, wrt=None, rtol=1e-4, atol=1e-6, eps=1e-6,
                       seed: int = 0, **params) -> None:
    """Compare the symbolic gradient of ``sum(out * w)`` (random ``w``) with central differences."""
    op_check.check_op_gradient(name, arrays, params, wrt=range(len(arrays)) if wrt is None else wrt,
                               rtol=rtol, atol=atol, eps=eps, is_train=False, seed=seed, ograd_seed=seed)
