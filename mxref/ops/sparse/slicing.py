"""``slice`` of csr rows: ``a[start:stop]`` of a CSRNDArray stays csr (no dense copy).

Math: rows ``start..stop-1`` keep their entries; ``indptr`` is the matching window of the old
one, shifted to start at 0. Column slices and steps fall back to dense (logged).
"""
from __future__ import annotations

import numpy as np

from .. import slicing  # noqa: F401 - registers 'slice' before its storage is declared
from ..slicing import slice_key
from .base import register_storage


def _rows_only(params) -> bool:
    """Whether ``params`` slice axis 0 only, with step 1 (the case csr keeps its storage)."""
    step = params.get("step") or ()
    if any(s not in (None, 1) for s in step):
        return False
    begin, end = params["begin"], params["end"]
    return len(begin) == 1 or (len(begin) == 2 and begin[1] in (None, 0) and end[1] is None)


def _slice_storage(params, in_stypes):
    return ["csr"] if in_stypes == ["csr"] and _rows_only(params) else None


def _slice_ex(octx, params, inputs, outputs, req):
    x, out = inputs[0], outputs[0]
    start, stop, _ = slice_key("slice", params, x.shape)[0].indices(x.shape[0])
    stop = max(start, stop)
    lo, hi = x.indptr[start], x.indptr[stop]
    out.indptr = x.indptr[start:stop + 1] - lo
    out.indices = np.copy(x.indices[lo:hi])
    out.data = np.copy(x.data[lo:hi])


register_storage("slice", _slice_storage, _slice_ex)
