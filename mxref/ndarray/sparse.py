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
from ..ops.sparse.base import CSR, IDX, RowSparse, empty_of, todense
from . import imperative as _imperative
from .chunk import Chunk
from .ndarray import NDArray, _from_numpy
from .utils import _ctx

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix", "row_sparse_array",
           "zeros", "empty", "array", "cast_storage", "retain", "new_sparse"]

_FLOAT32 = np.dtype(np.float32)
_HOST = ("cpu", "cpu_pinned", "cpu_shared")


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
            # _store copies every field that is not already the target's own memory.
            target._store(src._value())

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
            target._store(src._wrap([fields[0].astype(dt)] + fields[1:]))

        _engine.get().push_sync(cast, self.context, (self._chunk.var,), (target._chunk.var,), name="Cast")
        return target

    def __setitem__(self, key, value) -> None:
        """Only ``a[:] = value`` (an NDArray of any stype, a numpy array or a number), as MXNet."""
        if not (isinstance(key, slice) and key == slice(None)):
            raise MXNetError(f"{type(self).__name__} supports assignment to [:] only, got {key!r}")
        if isinstance(value, NDArray):
            value.copyto(self)
        elif isinstance(value, np.ndarray):
            _from_numpy(value.astype(self._dtype), self.context).copyto(self)
        elif np.isscalar(value) and value == 0:
            zeros(self.stype, self._shape, self.context, self._dtype).copyto(self)
        elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            # A nonzero fill stores every entry (every row): as dense, then cast.
            _from_numpy(np.full(self._shape, value, self._dtype), self.context).copyto(self)
        else:
            raise MXNetError(f"{type(self).__name__}[:] = value: value must be an NDArray, a numpy "
                             f"array or a number, got {type(value).__name__}")

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
    if ctx.device_type not in _HOST:
        # NOTE: the sparse kernels are numpy ones; on a GPU they would silently run on the host.
        raise MXNetError(f"{stype} arrays live on the CPU only; got context {ctx} "
                         "(cast_storage to 'default' first to move the values to a GPU)")
    return cls(ctx, tuple(int(d) for d in shape), np.dtype(dtype))


def _from_value(value, ctx, dtype) -> BaseSparseNDArray:
    arr = new_sparse(value.stype, value.shape, _ctx(ctx), dtype)
    arr._store(value)      # a brand-new variable: nothing is queued on it, so no engine op
    return arr


def _rebuild(stype, fields, shape, ctx):
    arr = new_sparse(stype, shape, _ctx(ctx), fields[0].dtype)
    arr._store(arr._wrap(fields))
    return arr


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


# The constructors (csr_matrix, row_sparse_array, zeros, empty, array) and the component checks
# live in sparse_create.py, which needs the classes above.
from .sparse_create import _check, array, csr_matrix, empty, row_sparse_array, zeros  # noqa: E402
