"""Lazy updates: an optimizer operator given a row_sparse gradient updates only the rows it holds.

Math: with ``R`` the gradient's row ids, every update operator ``w, states <- U(w, g, states)``
becomes, with ``lazy_update=True`` (MXNet's default)::

    w[R], states[R] <- U(w[R], g.data, states[R])          other rows untouched

i.e. the dense update restricted to the touched rows: weight decay, momentum and moment decay
apply only there (MXNet's ``SGDUpdateDnsRspDnsImpl`` and kin). ``lazy_update=False`` (where the
op has the flag) is the dense update with the missing rows' gradient taken as zero. The dense
kernel of each op does the arithmetic on the gathered rows, so the two cannot drift apart.

Weights and states may be dense or row_sparse; a row_sparse one is first made to hold every row
(MXNet requires it), after which the rows update in place. ``_sparse_adagrad_update`` is MXNet's
name for AdaGrad with a row_sparse gradient (``mx.nd.sparse.adagrad_update``).
"""
from __future__ import annotations

import numpy as np

from .. import optimizer  # noqa: F401 - registers the update operators first
from ..optimizer.adaptive import _adagrad
from ..optimizer.common import update_op
from ..registry import get
from .base import IDX, RowSparse, register_storage, todense

LAZY_OPS = ("sgd_update", "sgd_mom_update", "adam_update", "ftrl_update", "signum_update",
            "signsgd_update", "_adagrad_update", "_sparse_adagrad_update")

update_op("_sparse_adagrad_update", _adagrad, ("history",), dict(get("_adagrad_update").params),
          "AdaGrad with a row_sparse gradient: the ``_adagrad_update`` step on the touched rows only.")


def _all_rows(x) -> np.ndarray:
    """The dense values of a weight or state; a row_sparse one is made to store every row, and the
    returned array is its ``data`` (so writes to it update the array)."""
    if isinstance(x, np.ndarray):
        return x
    n = x.shape[0]
    if x.indices.size != n or (n and x.indices[-1] != n - 1):
        x.data, x.indices = todense(x), np.arange(n, dtype=IDX)
    return x.data


def _update_storage(params, in_stypes):
    kinds = set(in_stypes)
    if not kinds <= {"default", "row_sparse"}:
        return None
    return [in_stypes[0]]


def _lazy_for(name: str):
    dense = get(name).fcompute

    def kernel(octx, params, inputs, outputs, req):
        w_in, grad, states = inputs[0], inputs[1], [_all_rows(s) for s in inputs[2:]]
        w, out = _all_rows(w_in), _all_rows(outputs[0])
        if not np.may_share_memory(w, out):
            out[...] = w
        if not isinstance(grad, RowSparse) or not params.get("lazy_update", True):
            dense(octx, params, [w, todense(grad), *states], [out], ["write"])
            return
        rows = grad.indices
        if not rows.size:
            return
        w_rows, s_rows = w[rows], [s[rows] for s in states]
        new = np.empty_like(w_rows)
        dense(octx, params, [w_rows, grad.data, *s_rows], [new], ["write"])
        out[rows] = new
        for s, r in zip(states, s_rows):
            s[rows] = r

    return kernel


for _name in LAZY_OPS:
    register_storage(_name, _update_storage, _lazy_for(_name))
