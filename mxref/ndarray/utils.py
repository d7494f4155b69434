"""Creating NDArrays (``array``, ``zeros``, ``ones``, ``full``, ``arange``, ``eye``, ...) and ``waitall``."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import engine as _engine
from .. import util as _util
from ..base import MXNetError, normalize_dtype
from ..context import Context, current_context
from ..ops import registry
from . import imperative as _imperative
from .ndarray import NDArray, _empty, _from_numpy, _parse_context

__all__ = ["array", "empty", "zeros", "ones", "full", "arange", "eye", "zeros_like", "ones_like",
           "waitall"]

_FLOAT32 = np.dtype(np.float32)


def _ctx(ctx) -> Context:
    if ctx is None:
        return current_context()
    if isinstance(ctx, str):
        return _parse_context(ctx)
    if not isinstance(ctx, Context):
        raise MXNetError(f"ctx must be a Context, got {ctx!r}")
    return ctx


def _shape(shape, what: str):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise MXNetError(f"{what}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise MXNetError(f"{what}: negative dimension in shape {shape}")
    return shape


def _known_shape(shape: tuple, what: str) -> tuple:
    """``shape``, unless legacy shape semantics reads it as unknown: ``()`` (no dims) or a ``0``
    dim, which only NumPy shape semantics (``mx.np_shape()``) makes a scalar / zero-size array."""
    if not _util.is_np_shape() and (not shape or 0 in shape):
        raise MXNetError(f"{what}: shape {shape} is unknown under MXNet's legacy shape semantics "
                         "(() and 0 mean 'not known'); use mx.np_shape() for scalars and zero-size "
                         "arrays")
    return shape


def _create(op_name: str, ctx, out=None, **kwargs) -> NDArray:
    """Run a creation operator (no inputs) on ``ctx``."""
    op = registry.get(op_name)
    ctx = _ctx(ctx)
    if "ctx" in op.params:
        kwargs["ctx"] = str(ctx)
    pkey, params = _imperative.parse_params(op, kwargs)
    return _imperative.invoke(op, pkey, params, [], out, ctx)[0]


def array(source_array, ctx: Optional[Context] = None, dtype=None) -> NDArray:
    """A new NDArray holding a copy of ``source_array`` (an NDArray, numpy array or nested list).

    As in MXNet 1.x the dtype is float32 unless given, even for float64 or integer numpy input;
    an NDArray source keeps its own dtype.
    """
    if source_array.__class__ is not NDArray and (getattr(source_array, "_sparse", False)
                                                   or hasattr(source_array, "tocsr")):
        from . import sparse  # noqa: PLC0415 - sparse.py imports this module
        return sparse.array(source_array, ctx, dtype)   # scipy.sparse / sparse NDArray: stays sparse
    if isinstance(source_array, NDArray):
        dt = source_array._dtype if dtype is None else normalize_dtype(dtype)
        res = source_array.as_in_context(_ctx(ctx)) if ctx is not None else source_array
        return res.astype(dt, copy=True) if dt != res._dtype or res is source_array else res
    dt = _FLOAT32 if dtype is None else normalize_dtype(dtype)
    try:
        host = np.asarray(source_array, dtype=dt)
    except (TypeError, ValueError) as exc:
        raise MXNetError(f"array: cannot convert {type(source_array).__name__} to an NDArray: "
                         f"{exc}") from None
    return _from_numpy(host, _ctx(ctx))


def empty(shape, ctx: Optional[Context] = None, dtype=None, stype=None) -> NDArray:
    """A new array with unspecified values; its memory is allocated when first written."""
    if stype not in (None, "default"):
        from . import sparse  # noqa: PLC0415 - sparse.py imports this module
        return sparse.empty(stype, shape, ctx, dtype)
    dt = _FLOAT32 if dtype is None else normalize_dtype(dtype)
    return _empty(_shape(shape, "empty"), _ctx(ctx), dt)


def zeros(shape, ctx: Optional[Context] = None, dtype=None, stype=None, **kwargs) -> NDArray:
    """A new array of zeros (float32 unless ``dtype`` says otherwise); ``stype`` 'csr' or
    'row_sparse' gives a sparse one with no stored entries."""
    if stype not in (None, "default"):
        from . import sparse  # noqa: PLC0415 - sparse.py imports this module
        return sparse.zeros(stype, shape, ctx, dtype)
    return _create("_zeros", ctx, shape=_known_shape(_shape(shape, "zeros"), "zeros"),
                   dtype=_FLOAT32 if dtype is None else normalize_dtype(dtype), **kwargs)


def ones(shape, ctx: Optional[Context] = None, dtype=None, **kwargs) -> NDArray:
    """A new array of ones (float32 unless ``dtype`` says otherwise)."""
    return _create("_ones", ctx, shape=_known_shape(_shape(shape, "ones"), "ones"),
                   dtype=_FLOAT32 if dtype is None else normalize_dtype(dtype), **kwargs)


def full(shape, val, ctx: Optional[Context] = None, dtype=np.float32, out=None) -> NDArray:
    """A new array filled with ``val``."""
    return _create("_full", ctx, out, shape=_shape(shape, "full"), value=val,
                   dtype=normalize_dtype(dtype))


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx: Optional[Context] = None,
           dtype=np.float32) -> NDArray:
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times (MXNet's ``arange``)."""
    kwargs = dict(start=start, step=step, repeat=repeat, dtype=normalize_dtype(dtype))
    if stop is not None:
        kwargs["stop"] = stop
    if infer_range is not None:
        kwargs["infer_range"] = infer_range
    return _create("_arange", ctx, **kwargs)


def eye(N: int, M: int = 0, k: int = 0, ctx: Optional[Context] = None, dtype=None, **kwargs) -> NDArray:
    """A 2-D array with ones on the ``k``-th diagonal; ``M=0`` means square."""
    dt = _FLOAT32 if dtype is None else normalize_dtype(dtype)
    if registry.exists("_eye"):
        return _create("_eye", ctx, N=N, M=M, k=k, dtype=dt, **kwargs)
    # Built on the host: the values depend on nothing queued, so no engine operation is needed.
    return _from_numpy(np.eye(int(N), int(M) or None, int(k), dtype=dt), _ctx(ctx))


def zeros_like(data: NDArray, **kwargs) -> NDArray:
    """Zeros with the shape, dtype and context of ``data``."""
    return _create("_zeros", data.context, shape=data.shape, dtype=data._dtype)


def ones_like(data: NDArray, **kwargs) -> NDArray:
    """Ones with the shape, dtype and context of ``data``."""
    return ones(data.shape, data.context, data._dtype)


def waitall() -> None:
    """Block until every pushed operation is done; raise the first error nobody waited for."""
    _engine.get().wait_for_all()
