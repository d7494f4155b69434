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

Fast path: the lazy ``sgd_update`` on float32/float64 runs ``sgd_rows`` of
``mxref/_ext/sparse_kernels.pyx`` (in place, the dense C loop's operations) unless the switch says
reference only; ``tests/sparse/test_sparse_optimizers.py`` compares the two.
"""
from __future__ import annotations

import numpy as np

from ..._ext import loader as _loader
from ..._ext import switch as _switch
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


# The fast path of the lazy sgd_update: one C loop over the touched rows, in place, with the
# operations of the dense C loop (so the bits of the numpy step on the gathered rows).
_fast = _loader.load("sparse_kernels")


def _rows_loop_takes(out: np.ndarray, grad: RowSparse) -> bool:
    return (_fast is not None and not _switch.reference_only() and out.dtype in _FLOATS
            and grad.data.dtype == out.dtype and out.flags.c_contiguous and out.ndim >= 1
            and grad.data.flags.c_contiguous)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


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
        if name == "sgd_update" and _rows_loop_takes(out, grad):
            _fast.sgd_rows(out.reshape(out.shape[0], -1), grad.data.reshape(rows.size, -1), rows,
                           params["lr"], params["wd"], params["rescale_grad"], params["clip_gradient"])
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
