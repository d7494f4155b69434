"""NDArray indexing that is not a view: copies for ``a[:, 1]``-style keys, and slice assignment."""
from __future__ import annotations

import numpy as np

from .. import engine as _engine
from ..base import MXNetError, numeric_types
from . import imperative as _imperative
from .ndarray import NDArray, _empty, _from_numpy

__all__ = ["getitem_copy", "setitem"]


def _normalize_key(key):
    """Make a key numpy understands; NDArray indices are read now (they decide the result shape)."""
    if isinstance(key, tuple):
        return tuple(_normalize_key(k) for k in key)
    if isinstance(key, NDArray):
        idx = key.asnumpy()
        return idx.astype(np.int64) if idx.dtype.kind == "f" else idx
    if isinstance(key, list):
        return np.asarray(key)
    return key


def _result_shape(shape, key, what: str):
    """The shape ``x[key]`` has, found without touching memory (a zero-strided stand-in array)."""
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape, (0,) * len(shape))
    try:
        return probe[key].shape
    except (IndexError, TypeError, ValueError) as exc:
        raise MXNetError(f"{what}: invalid index {key!r} for an array of shape {shape}: {exc}") from None


def getitem_copy(src: NDArray, key) -> NDArray:
    """``src[key]`` as a new array (MXNet 1.x copies for anything but axis-0 basic slices)."""
    key = _normalize_key(key)
    shape = _result_shape(src._shape, key, "NDArray.__getitem__")
    # MXNet 1.x has no 0-d arrays: an element comes back with shape (1,).
    out_shape = shape if shape else (1,)
    if _imperative._record_hook is not None and src._ag is not None:
        return _recorded_getitem(src, key, out_shape)
    out = _empty(out_shape, src._chunk.ctx, src._dtype)

    def take(run_ctx):
        out._data()[...] = np.reshape(src._data()[key], out_shape)

    _engine.get().push_sync(take, src._chunk.ctx, (src._chunk.var,), (out._chunk.var,), name="_slice")
    return out


def _recorded_getitem(src: NDArray, key, out_shape) -> NDArray:
    """``src[key]`` while autograd records ``src``'s graph: the flat positions the key selects are
    found on an index array, then taken from ``src`` by recorded operators (a flattening view,
    ``take``, ``Reshape``), so the gradient is scattered back, repeated positions summed."""
    positions = np.arange(src.size, dtype=np.int64).reshape(src._shape)[key]
    idx = _from_numpy(np.ascontiguousarray(positions).reshape(-1), src._chunk.ctx)
    flat = src.reshape((-1,)) if src.size else src
    picked = _imperative.invoke_name("take", [flat, idx], {"axis": 0})[0]
    return picked.reshape(out_shape)


def setitem(dst: NDArray, key, value) -> None:
    """``dst[key] = value`` for int/slice/tuple keys and scalar, NDArray or array-like values.

    Pushed as one engine operation writing ``dst``'s variable, so it is ordered with every other
    use of ``dst`` and of any array sharing its memory. Shape mismatches raise now.

    While autograd records and ``dst`` or ``value`` is part of a graph, the assignment runs as the
    operator ``_slice_assign`` (``_slice_assign_scalar``) writing ``dst`` and is recorded: the
    gradient reaches ``value`` through the region. As in MXNet, assigning into an array that is
    already in the graph raises (its old value may be saved for backward).
    """
    key = _normalize_key(key)
    target = _result_shape(dst._shape, key, "NDArray.__setitem__")
    if _imperative._record_hook is not None and (
            dst._ag is not None or (isinstance(value, NDArray) and value._ag is not None)):
        _recorded_setitem(dst, key, target, value)
        return
    const_vars = ()
    if isinstance(value, NDArray):
        vshape = _check_broadcast(value._shape, target, key)
        src = value
        const_vars = (src._chunk.var,)

        def assign(run_ctx):
            # NOTE: reshaped first: numpy will not put a (1,) array into a single element
            dst._data()[key] = np.reshape(src._data(), vshape)

        name = "_slice_assign"
    elif isinstance(value, numeric_types):
        scalar = value

        def assign(run_ctx):
            dst._data()[key] = scalar

        name = "_slice_assign_scalar"
    else:
        try:
            host = np.array(value, dtype=dst._dtype)   # copied now: the caller may change it later
        except (TypeError, ValueError) as exc:
            raise MXNetError(f"NDArray.__setitem__: cannot assign a {type(value).__name__}: {exc}") from None
        # NOTE: reshaped to drop leading 1s, as for NDArray values: numpy will not put a (1,)
        # array into a single element (``b[0] = np.array([1.5])``).
        host = host.reshape(_check_broadcast(host.shape, target, key))

        def assign(run_ctx):
            dst._data()[key] = host

        name = "_slice_assign"
    if not _whole(dst, key):
        # NOTE: a partial write keeps the rest of the old value, so it reads it: if that value
        # carries an engine error, the assignment is skipped and the error stays (engine.md).
        const_vars = (*const_vars, dst._chunk.var)
    _engine.get().push_sync(assign, dst._chunk.ctx, const_vars, (dst._chunk.var,), name=name)


def _whole(dst: NDArray, key) -> bool:
    """Whether ``dst[key] = ...`` overwrites all of ``dst``'s memory block (``x[:]``, ``x[...]``)."""
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if not (k is Ellipsis or (isinstance(k, slice) and k == slice(None))):
            return False
    chunk = dst._chunk
    return dst._offset == 0 and dst.size * np.dtype(dst._dtype).itemsize == chunk.nbytes


def _check_broadcast(value_shape, target_shape, key) -> tuple:
    """numpy's assignment rule: leading 1s of the value drop, the rest broadcasts to the target.

    Returns the value's shape with those leading 1s dropped."""
    value_shape = tuple(value_shape)
    while len(value_shape) > len(target_shape) and value_shape[0] == 1:
        value_shape = value_shape[1:]
    try:
        ok = np.broadcast_shapes(value_shape, tuple(target_shape)) == tuple(target_shape)
    except ValueError:
        ok = False
    if not ok:
        raise MXNetError(f"NDArray.__setitem__: cannot assign a value of shape {tuple(value_shape)} to "
                         f"index {key!r}, which selects shape {tuple(target_shape)}")
    return value_shape


def _region(key, shape):
    """``(begin, end, step)`` of a basic key (ints and slices), as ``_slice_assign`` takes them, and
    the region's shape with an int-indexed axis kept as length 1."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) > len(shape):
        raise MXNetError(f"NDArray.__setitem__: index {key!r} has more axes than shape {shape}")
    begin, end, step = [], [], []
    for k, n in zip(key, shape):
        if isinstance(k, (int, np.integer)):
            i = int(k) % n if n else int(k)
            k = slice(i, i + 1, None)
        if not isinstance(k, slice):
            raise MXNetError(f"NDArray.__setitem__: index {key!r} cannot be recorded by autograd "
                             "(only ints and slices can); assign outside autograd.record()")
        begin.append(k.start)
        end.append(k.stop)
        step.append(k.step)
    params = {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)}
    region = tuple(len(range(*slice(b, e, s).indices(n))) for b, e, s, n in zip(begin, end, step, shape))
    return params, region + tuple(shape[len(key):])


def _recorded_setitem(dst: NDArray, key, target, value) -> None:
    """``dst[key] = value`` as a recorded ``_slice_assign``: the value is broadcast and reshaped to
    the region by recorded operators too, so its gradient is summed back to its own shape."""
    params, region = _region(key, dst._shape)
    if 0 in region:
        return        # an empty region: nothing is written (and Reshape reads 0 as "keep")
    invoke = _imperative.invoke_name
    if isinstance(value, numeric_types):
        invoke("_slice_assign_scalar", [dst], dict(params, scalar=float(value)), out=dst)
        return
    if not isinstance(value, NDArray):
        try:
            value = _from_numpy(np.array(value, dtype=dst._dtype), dst._chunk.ctx)
        except (TypeError, ValueError) as exc:
            raise MXNetError(f"NDArray.__setitem__: cannot assign a {type(value).__name__}: {exc}") from None
    vshape = _check_broadcast(value._shape, target, key)
    target = tuple(target)
    if value._shape != region and value.size != int(np.prod(region)):
        padded = (1,) * (len(target) - len(vshape)) + tuple(vshape)
        if value._shape != padded:
            value = invoke("Reshape", [value], {"shape": padded})[0]
        value = invoke("broadcast_to", [value], {"shape": target})[0]
    if value._shape != region:    # same size: leading 1s, or an int-indexed axis kept as 1
        value = invoke("Reshape", [value], {"shape": region})[0]
    if value._dtype != dst._dtype:
        value = invoke("Cast", [value], {"dtype": dst._dtype})[0]
    invoke("_slice_assign", [dst, value], params, out=dst)

