"""Sparse NDArrays (``mx.nd.sparse``): ``CSRNDArray``, ``RowSparseNDArray`` and their constructors.

A sparse array is an NDArray whose chunk holds no values: its engine variable orders every use,
as for a dense array, and its values live in *component* NDArrays (MXNet's data blob and aux
blobs): ``data`` then ``indptr``, ``indices`` for csr, ``data`` then ``indices`` for row_sparse.
An operation that writes a sparse array runs on the engine holding the array's variable and, since
the result's number of stored entries is only known then, puts fresh components in place, each
allocated from the storage pool at its exact size; the old components return to the pool through
their own chunks' ``delete_variable`` once nothing queued still uses them
(``docs/architecture/sparse.md``). ``.data`` / ``.indices`` / ``.indptr`` wait for pending writes
and return the current components, which share memory with the array until it is next rewritten.

Example::

    >>> a = mx.nd.sparse.csr_matrix(([1., 2.], [0, 2], [0, 1, 1, 2]), shape=(3, 3))
    >>> a.asnumpy()
    array([[1., 0., 0.], [0., 0., 0.], [0., 0., 2.]], dtype=float32)
    >>> a[1:3].indptr.asnumpy()
    array([0, 0, 1])
"""
from __future__ import annotations

import sys

import numpy as np

from .. import engine as _engine
from ..base import MXNetError, normalize_dtype
from ..context import Context
from ..ops import registry as _registry
from ..ops.sparse.base import CSR, IDX, RowSparse, empty_of, fromdense, todense
from . import imperative as _imperative
from .chunk import Chunk
from .ndarray import NDArray, _from_numpy
from .utils import _ctx, _shape
from .utils import zeros as dense_zeros

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix", "row_sparse_array",
           "zeros", "empty", "array", "cast_storage", "retain", "new_sparse"]

_FLOAT32 = np.dtype(np.float32)


class _State:
    """The current components of a sparse array (a list of NDArrays, or ``None``)."""

    __slots__ = ("parts",)

    def __init__(self):
        self.parts = None


class BaseSparseNDArray(NDArray):
    """What csr and row_sparse arrays share: components, waits, copies, conversion to dense."""

    __slots__ = ("_st",)
    _sparse = True

    def __init__(self, ctx: Context, shape, dtype, chunk=None, state=None):
        super().__init__(chunk or Chunk(0, ctx, _engine.get().new_variable()), tuple(shape), dtype, 0)
        # The components, in a holder that handles on the same array share (``detach``).
        self._st = state or _State()

    @property
    def _parts(self):
        return self._st.parts      # None: no stored entries yet (all zeros)

    @_parts.setter
    def _parts(self, parts):
        self._st.parts = parts

    def detach(self):
        """The same array (shared variable and components), cut off from the recorded graph."""
        return type(self)(self._chunk.ctx, self._shape, self._dtype, self._chunk, self._st)

    # -- the values, as kernels see them (inside engine operations, or after a wait) --------
    def _value(self):
        """The numpy container (``CSR`` / ``RowSparse``) over the current components."""
        if self._parts is None:
            return empty_of(self.stype, self._shape, self._dtype)
        return self._wrap([p._data() for p in self._parts])

    def _store(self, value) -> None:
        """Make ``value``'s fields the components; fields that are the current components'
        memory (updated in place) are kept, others are copied into fresh pool memory."""
        ctx = self._chunk.ctx
        fields = self._fields(value)
        old = self._parts or [None] * len(fields)
        parts = []
        for i, (arr, prev) in enumerate(zip(fields, old)):
            if prev is not None and prev._np is arr:
                parts.append(prev)
                continue
            dtype = self._dtype if i == 0 else IDX
            parts.append(_from_numpy(np.ascontiguousarray(arr, dtype=dtype), ctx))
        self._parts = parts

    def _data(self) -> np.ndarray:
        # NOTE: dense code that reaches a sparse array (a kernel of a fallback, ``copyto`` into a
        # dense array) reads its dense form; it is never a view, so writes to it are lost.
        return todense(self._value())

    def _part(self, i: int) -> NDArray:
        self.wait_to_read()
        if self._parts is None:
            self._store(empty_of(self.stype, self._shape, self._dtype))
        return self._parts[i]

    @property
    def data(self) -> NDArray:
        """The stored values (a component: shares memory until the array is rewritten)."""
        return self._part(0)

    def asnumpy(self) -> np.ndarray:
        self.wait_to_read()
        return self._data()

    def tostype(self, stype: str) -> NDArray:
        return cast_storage(self, stype)

    # -- copies ------------------------------------------------------------------------------
    def copyto(self, other):
        """Copy into ``other`` (an NDArray of the same shape, any stype) or onto a context."""
        if isinstance(other, Context):
            target = new_sparse(self.stype, self._shape, other, self._dtype)
        elif isinstance(other, NDArray):
            if other is self:
                return other
            if other._shape != self._shape:
                raise MXNetError(f"copyto: shape mismatch, source {self._shape} vs target {other._shape}")
            if other.context != self.context or other.stype != self.stype:
                return _imperative.invoke_name("cast_storage", [self], {"stype": other.stype}, out=other)[0]
            target = other
        else:
            raise MXNetError(f"copyto: target must be an NDArray or a Context, got {type(other).__name__}")
        src = self

        def copy(run_ctx):
            target._store(src._wrap([np.copy(f) for f in src._fields(src._value())]))

        _engine.get().push_sync(copy, target._chunk.ctx, (src._chunk.var,), (target._chunk.var,),
                                name="_copyto")
        return target

    def copy(self):
        return self.copyto(self.context)

    def as_in_context(self, context: Context):
        return self if self.context == context else self.copyto(context)

    def astype(self, dtype, copy: bool = True):
        dt = normalize_dtype(dtype, "astype dtype")
        if not copy and dt == self._dtype:
            return self
        target, src = new_sparse(self.stype, self._shape, self.context, dt), self

        def cast(run_ctx):
            fields = src._fields(src._value())
            target._store(src._wrap([fields[0].astype(dt)] + [np.copy(f) for f in fields[1:]]))

        _engine.get().push_sync(cast, self.context, (self._chunk.var,), (target._chunk.var,), name="Cast")
        return target

    def __setitem__(self, key, value) -> None:
        """Only ``a[:] = value`` (an NDArray of any stype, a numpy array or a scalar 0), as MXNet."""
        if not (isinstance(key, slice) and key == slice(None)):
            raise MXNetError(f"{type(self).__name__} supports assignment to [:] only, got {key!r}")
        if isinstance(value, NDArray):
            value.copyto(self)
        elif isinstance(value, np.ndarray):
            _from_numpy(value.astype(self._dtype), self.context).copyto(self)
        elif np.isscalar(value) and value == 0:
            zeros(self.stype, self._shape, self.context, self._dtype).copyto(self)
        else:
            raise MXNetError(f"{type(self).__name__}[:] = value: value must be an NDArray, a numpy "
                             f"array or 0, got {type(value).__name__}")

    def __iter__(self):
        raise MXNetError(f"{type(self).__name__} does not support iteration")

    def __repr__(self) -> str:
        return f"\n<{type(self).__name__} {'x'.join(map(str, self._shape))} @{self.context}>"

    def __reduce__(self):
        self._part(0)
        value = self._value()
        return _rebuild, (self.stype, [np.copy(f) for f in self._fields(value)], self._shape,
                          str(self.context))

    def check_format(self, full_check: bool = True) -> None:
        """Raise ``MXNetError`` if the components do not describe a valid array of this stype."""
        self.wait_to_read()
        _check(self.stype, self._fields(self._value()), self._shape, "check_format")


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format (``data``, ``indices``, ``indptr``)."""

    __slots__ = ()

    @property
    def stype(self) -> str:
        return "csr"

    def _wrap(self, fields):
        data, indptr, indices = fields
        return CSR(data, indices, indptr, self._shape)

    @staticmethod
    def _fields(value):
        return [value.data, value.indptr, value.indices]

    @property
    def indptr(self) -> NDArray:
        return self._part(1)

    @property
    def indices(self) -> NDArray:
        return self._part(2)

    def __getitem__(self, key):
        """Rows ``a[i]`` (as a 1-row csr) and ``a[start:stop]`` (step 1), as MXNet's csr slicing."""
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            n = self._shape[0]
            i = int(key) + (n if key < 0 else 0)
            if not 0 <= i < n:
                raise IndexError(f"index {key} is out of bounds for axis 0 with size {n}")
            key = slice(i, i + 1)
        if isinstance(key, slice) and key.step in (None, 1):
            start, stop, _ = key.indices(self._shape[0])
            rows = {"begin": (start,), "end": (max(start, stop),)}
            return _imperative.invoke_name("slice", [self], rows)[0]
        raise MXNetError(f"CSRNDArray indexing supports an int or a slice with step 1, got {key!r}")

    def asscipy(self):
        """A ``scipy.sparse.csr_matrix`` with a copy of the values (needs scipy)."""
        try:
            import scipy.sparse as spsp  # noqa: PLC0415 - optional dependency
        except ImportError:
            raise MXNetError("CSRNDArray.asscipy needs scipy, which is not installed") from None
        self.wait_to_read()
        v = self._value()
        return spsp.csr_matrix((np.copy(v.data), np.copy(v.indices), np.copy(v.indptr)), shape=self._shape)


class RowSparseNDArray(BaseSparseNDArray):
    """Some rows of an array (``data``) and their row ids (``indices``); other rows are zero."""

    __slots__ = ()

    @property
    def stype(self) -> str:
        return "row_sparse"

    def _wrap(self, fields):
        data, indices = fields
        return RowSparse(data, indices, self._shape)

    @staticmethod
    def _fields(value):
        return [value.data, value.indices]

    @property
    def indices(self) -> NDArray:
        return self._part(1)

    def retain(self, indices) -> "RowSparseNDArray":
        """The rows of this array whose ids are in ``indices`` (``mx.nd.sparse.retain``)."""
        return retain(self, indices)

    def __getitem__(self, key):
        if isinstance(key, slice) and key == slice(None):
            return self
        raise MXNetError(f"RowSparseNDArray supports [:] only, got {key!r}")


_CLASSES = {"csr": CSRNDArray, "row_sparse": RowSparseNDArray}


def new_sparse(stype: str, shape, ctx: Context, dtype) -> BaseSparseNDArray:
    """A new array of ``stype`` with no stored entries (what an operator's output starts as)."""
    cls = _CLASSES.get(stype)
    if cls is None:
        raise MXNetError(f"unknown sparse storage type {stype!r} (expected 'csr' or 'row_sparse')")
    if stype == "csr" and len(shape) != 2:
        raise MXNetError(f"csr arrays are 2-D, got shape {tuple(shape)}")
    return cls(ctx, tuple(int(d) for d in shape), np.dtype(dtype))


def _from_value(value, ctx, dtype) -> BaseSparseNDArray:
    arr = new_sparse(value.stype, value.shape, _ctx(ctx), dtype)
    arr._store(value)      # a brand-new variable: nothing is queued on it, so no engine op
    return arr


def _rebuild(stype, fields, shape, ctx):
    arr = new_sparse(stype, shape, _ctx(ctx), fields[0].dtype)
    arr._store(arr._wrap(fields))
    return arr


def _check(stype: str, fields, shape, what: str) -> None:
    """Validate components before they become an array; errors name the field at fault."""
    if stype == "csr":
        data, indptr, indices = fields
        if len(shape) != 2:
            raise MXNetError(f"{what}: csr shape must be 2-D, got {tuple(shape)}")
        if indptr.ndim != 1 or indptr.size != shape[0] + 1:
            raise MXNetError(f"{what}: indptr must have shape[0] + 1 = {shape[0] + 1} entries, "
                             f"got {indptr.shape}")
        if indptr[0] != 0 or np.any(np.diff(indptr) < 0):
            raise MXNetError(f"{what}: indptr must start at 0 and never decrease, got {indptr.tolist()[:16]}")
        if data.shape != (indptr[-1],) or indices.shape != (indptr[-1],):
            raise MXNetError(f"{what}: data {data.shape} and indices {indices.shape} must both hold "
                             f"indptr[-1] = {int(indptr[-1])} entries")
        if indices.size and (indices.min() < 0 or indices.max() >= shape[1]):
            raise MXNetError(f"{what}: column indices must lie in [0, {shape[1]}), got "
                             f"[{int(indices.min())}, {int(indices.max())}]")
    else:
        data, indices = fields
        if indices.ndim != 1 or data.shape != (indices.size,) + tuple(shape[1:]):
            raise MXNetError(f"{what}: row_sparse data must have shape (len(indices),) + "
                             f"{tuple(shape[1:])} = {(indices.size,) + tuple(shape[1:])}, got {data.shape}")
        if indices.size and (indices.min() < 0 or indices.max() >= shape[0]):
            raise MXNetError(f"{what}: row indices must lie in [0, {shape[0]}), got "
                             f"[{int(indices.min())}, {int(indices.max())}]")
        if indices.size > 1 and np.any(np.diff(indices) <= 0):
            raise MXNetError(f"{what}: row indices must be sorted and unique")


# ---------------------------------------------------------------------------------------------
# Constructors (MXNet's mx.nd.sparse.csr_matrix, row_sparse_array, zeros, empty, array)
# ---------------------------------------------------------------------------------------------

def _host(x, dtype=None) -> np.ndarray:
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x, dtype=dtype)


def _default_dtype(source, dtype):
    if dtype is not None:
        return normalize_dtype(dtype)
    if isinstance(source, (np.ndarray, NDArray)):
        return np.dtype(source.dtype)
    return _FLOAT32


def _is_scipy_sparse(x) -> bool:
    return hasattr(x, "tocsr") and hasattr(x, "nnz")


def csr_matrix(arg1, shape=None, ctx=None, dtype=None) -> CSRNDArray:
    """A ``CSRNDArray`` from ``(data, indices, indptr)``, ``(data, (row, col))`` (COO),
    a ``(rows, cols)`` shape (all zeros), a dense numpy array or NDArray, a CSRNDArray, or a
    ``scipy.sparse`` matrix. The dtype is the source's for arrays, else float32."""
    if isinstance(arg1, CSRNDArray):
        return arg1.copyto(_ctx(ctx)) if dtype is None else arg1.astype(dtype)
    if _is_scipy_sparse(arg1):
        m = arg1.tocsr()
        m.sum_duplicates()    # also sorts the column ids of each row
        dt = normalize_dtype(dtype) if dtype is not None else np.dtype(m.dtype)
        return csr_matrix((m.data, m.indices, m.indptr), shape=m.shape, ctx=ctx, dtype=dt)
    if isinstance(arg1, tuple) and len(arg1) == 2 and all(isinstance(d, (int, np.integer)) for d in arg1):
        return zeros("csr", arg1, ctx, dtype)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        dt = _default_dtype(arg1[0], dtype)
        data, indices, indptr = _host(arg1[0], dt).astype(dt), _host(arg1[1]), _host(arg1[2])
        if shape is None:
            shape = (indptr.size - 1, int(indices.max()) + 1 if indices.size else 0)
        fields = [data.reshape(-1), indptr.astype(IDX), indices.astype(IDX)]
        _check("csr", fields, tuple(shape), "csr_matrix")
        return _from_value(CSR(fields[0], fields[2], fields[1], tuple(shape)), ctx, dt)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        dt = _default_dtype(arg1[0], dtype)
        data = _host(arg1[0], dt).astype(dt).reshape(-1)
        row, col = (_host(v).astype(IDX).reshape(-1) for v in arg1[1])
        if shape is None:
            shape = (int(row.max()) + 1 if row.size else 0, int(col.max()) + 1 if col.size else 0)
        if not (data.size == row.size == col.size):
            raise MXNetError(f"csr_matrix: data, row and col must have one length, got "
                             f"{data.size}, {row.size}, {col.size}")
        if row.size and (row.min() < 0 or row.max() >= shape[0] or col.min() < 0 or col.max() >= shape[1]):
            raise MXNetError(f"csr_matrix: (row, col) coordinates out of range for shape {tuple(shape)}")
        dense = np.zeros(shape, dt)
        np.add.at(dense, (row, col), data)    # duplicates sum, as scipy's coo -> csr
        return _from_value(fromdense(dense, "csr"), ctx, dt)
    dt = _default_dtype(arg1, dtype)
    dense = _host(arg1, dt).astype(dt)
    if shape is not None and tuple(shape) != dense.shape:
        raise MXNetError(f"csr_matrix: shape {tuple(shape)} does not match the source's {dense.shape}")
    if dense.ndim != 2:
        raise MXNetError(f"csr_matrix: a dense source must be 2-D, got shape {dense.shape}")
    return _from_value(fromdense(dense, "csr"), ctx, dt)


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None) -> RowSparseNDArray:
    """A ``RowSparseNDArray`` from ``(data, indices)``, a shape (all zeros), a dense numpy array
    or NDArray, or a RowSparseNDArray. Unsorted ids are sorted; duplicate ids are summed."""
    if isinstance(arg1, RowSparseNDArray):
        return arg1.copyto(_ctx(ctx)) if dtype is None else arg1.astype(dtype)
    if isinstance(arg1, tuple) and arg1 and all(isinstance(d, (int, np.integer)) for d in arg1):
        return zeros("row_sparse", arg1, ctx, dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        dt = _default_dtype(arg1[0], dtype)
        data, indices = _host(arg1[0], dt).astype(dt), _host(arg1[1]).astype(IDX).reshape(-1)
        if data.ndim == 0 or data.shape[0] != indices.size:
            raise MXNetError(f"row_sparse_array: data has shape {data.shape} but there are "
                             f"{indices.size} indices (one row of data per index)")
        if shape is None:
            shape = (int(indices.max()) + 1 if indices.size else 0,) + data.shape[1:]
        shape = tuple(int(d) for d in shape)
        if indices.size and (indices.min() < 0 or indices.max() >= shape[0]):
            raise MXNetError(f"row_sparse_array: row indices must lie in [0, {shape[0]}), got "
                             f"[{int(indices.min())}, {int(indices.max())}]")
        if indices.size > 1 and np.any(np.diff(indices) <= 0):
            uniq, inverse = np.unique(indices, return_inverse=True)
            merged = np.zeros((uniq.size,) + data.shape[1:], dt)
            np.add.at(merged, inverse, data)
            data, indices = merged, uniq
        _check("row_sparse", [data, indices], shape, "row_sparse_array")
        return _from_value(RowSparse(data, indices, shape), ctx, dt)
    dt = _default_dtype(arg1, dtype)
    dense = _host(arg1, dt).astype(dt)
    if shape is not None and tuple(shape) != dense.shape:
        raise MXNetError(f"row_sparse_array: shape {tuple(shape)} does not match the source's {dense.shape}")
    return _from_value(fromdense(dense, "row_sparse"), ctx, dt)


def zeros(stype: str, shape, ctx=None, dtype=None, **kwargs) -> NDArray:
    """An all-zero array of ``stype`` ('default', 'row_sparse' or 'csr'): no stored entries."""
    shape = _shape(shape, "sparse.zeros")
    if stype in (None, "default"):
        return dense_zeros(shape, ctx, dtype, **kwargs)
    arr = new_sparse(stype, shape, _ctx(ctx), _FLOAT32 if dtype is None else normalize_dtype(dtype))
    arr._store(empty_of(stype, shape, arr._dtype))
    return arr


def empty(stype: str, shape, ctx=None, dtype=None) -> NDArray:
    """As ``zeros``: a sparse array with no stored entries is all zeros."""
    return zeros(stype, shape, ctx, dtype)


def array(source_array, ctx=None, dtype=None) -> BaseSparseNDArray:
    """A sparse array from a sparse NDArray or a ``scipy.sparse`` matrix (csr for anything but a
    RowSparseNDArray), as ``mx.nd.sparse.array``."""
    if isinstance(source_array, RowSparseNDArray):
        return row_sparse_array(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, CSRNDArray) or _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise MXNetError(f"sparse.array: expected a sparse NDArray or a scipy.sparse matrix, got "
                     f"{type(source_array).__name__} (use csr_matrix / row_sparse_array for dense input)")


def cast_storage(data: NDArray, stype: str, out=None) -> NDArray:
    """``data`` converted to storage type ``stype`` (a new array; ``out=`` to write into one)."""
    return _imperative.invoke_name("cast_storage", [data], {"stype": stype}, out=out)[0]


def retain(data: NDArray, indices) -> NDArray:
    """The rows of a row_sparse ``data`` whose ids are in ``indices`` (MXNet's ``_sparse_retain``)."""
    if not isinstance(indices, NDArray):
        indices = _from_numpy(np.asarray(indices, dtype=np.int64), data.context)
    return _imperative.invoke_name("_sparse_retain", [data, indices], {})[0]


def __getattr__(name: str):
    """``mx.nd.sparse.<op>``: the ``_sparse_<op>`` operator where MXNet has one, else ``mx.nd.<op>``."""
    from . import register as _register  # noqa: PLC0415 - register imports the package
    for opname in (f"_sparse_{name}", name, f"_{name}"):
        if _registry.exists(opname):
            fn = _register.make_function(_registry.get(opname), name)
            setattr(sys.modules[__name__], name, fn)
            return fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
