"""The NDArray class: a Chunk seen through shape, dtype and byte offset; operators push to the engine."""
from __future__ import annotations

import math
from typing import Optional, Tuple, Union

import numpy as np

from .. import engine as _engine
from ..base import MXNetError, normalize_dtype, numeric_types
from ..context import Context, current_context
from ..engine.base import FnProperty
from .chunk import Chunk

__all__ = ["NDArray"]


def _copy_device(dst, src) -> None:
    """A copy with device memory on either side (host↔device, device↔device)."""
    from .._ext.cuda import runtime  # noqa: PLC0415 - the GPU runtime loads on first use
    runtime.copy_array(dst, src)

_EMPTY: dict = {}


class NDArray:
    """An n-dimensional array whose every operation is an engine operation (MXNet 1.x semantics).

    Operations return at once; the work runs on an engine worker in dependency order. Reading the
    values (``asnumpy``, ``asscalar``, ``wait_to_read``) waits, and raises the error of any failed
    operation that produced them::

        a = mx.nd.ones((2, 3))
        b = a * 2 + 1        # queued, not yet computed
        b.asnumpy()          # waits, then copies to numpy

    Reshapes and axis-0 basic slices (``a[1:3]``, ``a[2]``) are views: they share ``a``'s memory
    and engine variable, so writes through them change ``a`` and are ordered with its other uses.
    Other indexing returns a copy.

    Every method is defined here, autograd's (``attach_grad``, ``backward``, ``detach``) included,
    except the ones that only forward to an operator of the same name (``a.sum()``, ``a.exp()``),
    which ``methods.py`` generates from the operator table when this module loads.
    """

    __slots__ = ("_chunk", "_shape", "_dtype", "_offset", "_np", "_ag", "_grad", "__weakref__")
    # Keep numpy from treating NDArray as a sequence in mixed expressions (``np_array + nd``).
    __array_priority__ = 1000.0
    # Sparse arrays (``sparse.py``) set this: ``invoke`` checks it to route them to the storage
    # dispatch, a class attribute so the dense path pays one attribute read per input.
    _sparse = False

    def __init__(self, chunk: Chunk, shape: Tuple[int, ...], dtype: np.dtype, offset: int = 0):
        self._chunk = chunk
        self._shape = shape
        self._dtype = dtype
        self._offset = offset
        self._np = None     # cached numpy view of the memory, built on first use
        self._ag = None     # autograd's record of how this array was computed (mxref.autograd)
        self._grad = None   # gradient buffer attached by autograd

    # -- the memory ------------------------------------------------------------------------
    def _data(self) -> np.ndarray:
        """The numpy view of this array's memory (allocating the chunk on first use).

        Only for code that runs inside engine operations, or after a wait: it does not wait.
        """
        view = self._np
        if view is None:
            buf = self._chunk.data()
            if buf.__class__ is np.ndarray:
                view = np.ndarray(self._shape, self._dtype, buf, self._offset)
            else:       # device memory: a DeviceArray, which numpy code cannot read by mistake
                view = buf.view(self._shape, self._dtype, self._offset)
            self._np = view
        return view

    def _view(self, shape: Tuple[int, ...], offset: int) -> "NDArray":
        return NDArray(self._chunk, shape, self._dtype, offset)

    # -- attributes ------------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        return self._shape

    @property
    def dtype(self):
        """The numpy scalar type (``numpy.float32``), as MXNet returns it."""
        return self._dtype.type

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def context(self) -> Context:
        return self._chunk.ctx

    ctx = context

    @property
    def stype(self) -> str:
        """The storage type: 'default' (dense) here, 'csr' or 'row_sparse' for sparse arrays."""
        return "default"

    def tostype(self, stype: str) -> "NDArray":
        """This array in storage type ``stype`` (``mx.nd.cast_storage``; dense to dense: a copy)."""
        return _imperative.invoke_name("cast_storage", [self], {"stype": stype}, None)[0]

    @property
    def T(self) -> "NDArray":
        if self.ndim > 2:
            raise MXNetError(f"NDArray.T: only for arrays with at most 2 dimensions, got shape "
                             f"{self._shape}; use transpose(axes=...)")
        return _imperative.invoke_name("transpose", [self], _EMPTY, None)[0]

    @property
    def grad(self) -> Optional["NDArray"]:
        """The gradient buffer ``attach_grad`` gave this array (``None`` before)."""
        return self._grad

    @property
    def writable(self) -> bool:
        return True

    # -- synchronisation and copies to the host --------------------------------------------
    def wait_to_read(self) -> None:
        """Block until every pending write of this array is done; raise the error of a failed one."""
        _engine.get().wait_for_var(self._chunk.var)

    def wait_to_write(self) -> None:
        """Block until every pending read and write of this array is done."""
        eng = _engine.get()
        eng.push_sync(_nothing, self._chunk.ctx, (), (self._chunk.var,), name="WaitToWrite")
        eng.wait_for_var(self._chunk.var)

    def asnumpy(self) -> np.ndarray:
        """A numpy copy of the values; waits for pending writes and raises their errors."""
        self.wait_to_read()
        data = self._data()
        return data.copy() if data.__class__ is np.ndarray else data.get()   # get: device to host

    def asscalar(self):
        """The value of a one-element array as a numpy scalar."""
        if self.size != 1:
            raise ValueError("The current array is not a scalar")
        return self.asnumpy().reshape(-1)[0]

    def __array__(self, dtype=None, copy=None):
        arr = self.asnumpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    # -- copies between arrays and devices -------------------------------------------------
    def copyto(self, other: Union["NDArray", Context]) -> "NDArray":
        """Copy into ``other`` (an NDArray of the same shape) or into a new array on a context."""
        if isinstance(other, Context):
            target = _empty(self._shape, other, self._dtype)
        elif isinstance(other, NDArray):
            if other is self or (other._chunk is self._chunk and other._offset == self._offset):
                return other   # copying an array onto itself: nothing to do (MXNet warns)
            if other._shape != self._shape:
                raise MXNetError(f"copyto: shape mismatch, source {self._shape} vs target {other._shape}")
            if other._sparse:      # into a sparse array: its components are rewritten
                return _imperative.invoke_name("cast_storage", [self], {"stype": other.stype}, other)[0]
            target = other
        else:
            raise MXNetError(f"copyto: target must be an NDArray or a Context, got {type(other).__name__}")
        src = self

        def copy(run_ctx):
            dst, data = target._data(), src._data()
            if dst.__class__ is np.ndarray and data.__class__ is np.ndarray:
                dst[...] = data
            else:
                _copy_device(dst, data)

        dst_ctx, src_ctx = target._chunk.ctx, self._chunk.ctx
        if dst_ctx == src_ctx:
            # On one GPU the copy is a kernel of that GPU's stream; on the host, a plain op.
            _engine.get().push_sync(copy, dst_ctx, (src._chunk.var,), (target._chunk.var,),
                                    name="_copyto")
            if _imperative._record_hook is not None:
                _record_view("_copy", self, target)
            return target
        # Between devices: on the copy workers, so it overlaps both devices' computation (a copy
        # from a GPU on that GPU's copy workers, as MXNet's CopyFromTo); recorded as a
        # _CrossDeviceCopy, whose gradient copies back to this array's device.
        where = src_ctx if src_ctx.device_type == "gpu" else dst_ctx
        _engine.get().push_sync(copy, where, (src._chunk.var,), (target._chunk.var,),
                                prop=_copy_property(src_ctx, dst_ctx), name="_CrossDeviceCopy")
        if _imperative._record_hook is not None:
            _record_view("_CrossDeviceCopy", self, target, src=str(src_ctx), dst=str(dst_ctx))
        return target

    def copy(self) -> "NDArray":
        """A new array with the same values on the same context."""
        return self.copyto(self._chunk.ctx)

    def as_in_context(self, context: Context) -> "NDArray":
        """This array if it already lives on ``context``, else a copy there."""
        if self._chunk.ctx == context:
            return self
        return self.copyto(context)

    def astype(self, dtype, copy: bool = True) -> "NDArray":
        """Values converted to ``dtype``; with ``copy=False`` and the same dtype, ``self``."""
        dt = normalize_dtype(dtype, "astype dtype")
        if not copy and dt == self._dtype:
            return self
        return _imperative.invoke_name("Cast", [self], {"dtype": dt}, None)[0]

    # -- views -----------------------------------------------------------------------------
    def reshape(self, *shape, **kwargs) -> "NDArray":
        """A view with a new shape; MXNet's special codes 0, -1, -2, -3, -4 are understood.

        ``a.reshape(2, 3)``, ``a.reshape((2, 3))`` and ``a.reshape(shape=(2, 3))`` are the same.
        """
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        if shape:
            if "shape" in kwargs:
                raise MXNetError("reshape: give the shape positionally or as shape=, not both")
            kwargs["shape"] = shape
        from ..ops import registry  # noqa: PLC0415 - ops register after this module loads
        from ..ops.shape import infer_reshape  # noqa: PLC0415 - same
        op = registry.get("Reshape")
        params = op.parse_params(kwargs)
        if not params["shape"]:
            raise MXNetError("reshape: parameter 'shape' must be given")
        # NOTE: a size mismatch is a ValueError here (MXNet checks it in Python after the C call),
        # while mx.nd.reshape raises MXNetError for the same shapes.
        new_shape = infer_reshape(self._shape, params["shape"], params["reverse"], check_size=False)
        if math.prod(new_shape) != self.size:
            raise ValueError(f"Cannot reshape array of size {self.size} into shape {tuple(params['shape'])}")
        out = self._view(tuple(new_shape), self._offset)
        if _imperative._record_hook is not None:
            _record_view("Reshape", self, out, shape=out._shape)
        return out

    def _at(self, idx: int) -> "NDArray":
        """View of ``self[idx]`` along axis 0 (shape ``(1,)`` for a 1-D array, as MXNet 1.x)."""
        n = self._shape[0]
        if idx < 0:
            idx += n
        if not 0 <= idx < n:
            raise IndexError(f"index {idx} is out of bounds for axis 0 with size {n}")
        if _imperative._record_hook is not None:
            # Made of the two views autograd can record: a slice_axis and, below 1-D, a Reshape.
            row = self._slice(idx, idx + 1)
            return row if len(self._shape) == 1 else row.reshape(self._shape[1:])
        row = self._shape[1:] or (1,)
        row_bytes = math.prod(self._shape[1:]) * self._dtype.itemsize
        return self._view(row, self._offset + idx * row_bytes)

    def _slice(self, start: int, stop: int) -> "NDArray":
        row_bytes = math.prod(self._shape[1:]) * self._dtype.itemsize
        out = self._view((stop - start,) + self._shape[1:], self._offset + start * row_bytes)
        if _imperative._record_hook is not None:
            _record_view("slice_axis", self, out, axis=0, begin=start, end=stop)
        return out

    def __getitem__(self, key):
        if self.ndim == 0:
            raise IndexError("cannot index a 0-d NDArray")
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            return self._at(int(key))
        if isinstance(key, slice) and key.step in (None, 1):
            start, stop, _ = key.indices(self._shape[0])
            return self._slice(start, max(start, stop))
        if (isinstance(key, tuple) and 1 < len(key) <= self.ndim and all(isinstance(k, slice) for k in key)):
            full = key + (slice(None),) * (self.ndim - len(key))
            if NDArray._basic_indexing_slice_is_contiguous(full, self._shape):
                return self._contiguous_region(full)
        return _indexing.getitem_copy(self, key)

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape) -> bool:
        """Whether ``x[slc_key]`` (one ``slice`` per axis of ``shape``) is one contiguous block of
        ``x``'s row-major memory, so it can be a view (MXNet's rule, which numpy's flags agree with).

        Scanning from the last axis: axes kept whole (in order) may be followed by one axis kept in
        part with step 1, and every axis before that must keep a single element. A result of at
        most one element, or of none, is always contiguous.
        """
        counts = [len(range(*k.indices(n))) for k, n in zip(slc_key, shape)]
        if 0 in counts or math.prod(counts) <= 1:
            return True
        axis = len(shape) - 1
        while axis >= 0 and counts[axis] == shape[axis] and (counts[axis] == 1 or
                                                             slc_key[axis].indices(shape[axis])[2] == 1):
            axis -= 1
        if axis < 0:
            return True
        if counts[axis] > 1 and slc_key[axis].indices(shape[axis])[2] != 1:
            return False
        return all(c == 1 for c in counts[:axis])

    def _contiguous_region(self, full_key) -> "NDArray":
        """The view ``self[full_key]`` for a contiguous basic slice (see above); recorded as ``slice``."""
        begins, counts = [], []
        for k, n in zip(full_key, self._shape):
            start, _, step = k.indices(n)
            count = len(range(*k.indices(n)))
            # A single element of a backward slice starts at ``start`` all the same.
            begins.append(start if count else 0)
            counts.append(count)
        shape = tuple(counts)
        elem = 0
        stride = 1
        for b, n in zip(reversed(begins), reversed(self._shape)):
            elem += b * stride
            stride *= n
        out = self._view(shape, self._offset + (elem * self._dtype.itemsize if math.prod(shape) else 0))
        if _imperative._record_hook is not None:
            _record_view("slice", self, out, begin=tuple(begins),
                         end=tuple(b + c for b, c in zip(begins, counts)), step=(1,) * len(shape))
        return out

    def __setitem__(self, key, value) -> None:
        _indexing.setitem(self, key, value)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d NDArray")
        return self._shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self._at(i)

    # -- autograd (the work is done by mxref.autograd, imported when first needed) ----------
    def attach_grad(self, grad_req: str = "write", stype: Optional[str] = None) -> None:
        """Give this array a zero gradient buffer (``self.grad``) and make it a variable for autograd.

        ``grad_req`` is 'write' (default), 'add' (accumulate over backward calls) or 'null';
        ``stype='row_sparse'`` makes the buffer row_sparse (only the rows a backward touches).
        """
        if stype not in (None, "default", "row_sparse", "csr"):
            raise MXNetError(f"attach_grad: stype must be 'default', 'row_sparse' or 'csr', got {stype!r}")
        from .. import autograd  # noqa: PLC0415 - an API facade: autograd sits above ndarray
        from .utils import zeros  # noqa: PLC0415 - utils imports this module
        # As MXNet: without ``stype`` the buffer has the array's own storage type.
        grad = zeros(self._shape, self._chunk.ctx, self._dtype, stype=stype or self.stype)
        autograd.mark_variables([self], [grad], grad_req)

    def backward(self, out_grad: Optional["NDArray"] = None, retain_graph: bool = False,
                 train_mode: bool = True) -> None:
        """``autograd.backward([self], [out_grad], retain_graph, train_mode)``."""
        from .. import autograd  # noqa: PLC0415 - an API facade: autograd sits above ndarray
        autograd.backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)

    def detach(self) -> "NDArray":
        """The same values (shared memory), cut off from the recorded graph."""
        return NDArray(self._chunk, self._shape, self._dtype, self._offset)

    # -- Python protocol -------------------------------------------------------------------
    def __repr__(self) -> str:
        shape_info = "x".join(str(d) for d in self._shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape_info} @{self.context}>"

    def __bool__(self) -> bool:
        n = self.size
        if n == 0:
            return False
        if n == 1:
            return bool(self.asscalar())
        raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")

    def __hash__(self) -> int:
        return id(self) // 16

    def __reduce__(self):
        return _from_numpy, (self.asnumpy(), str(self.context))

    # -- arithmetic and comparison (each is one operator pushed to the engine) -------------
    def _binary(self, other, elem: Optional[str], bcast: str, scalar: str, out=None):
        if isinstance(other, NDArray):
            name = elem if elem is not None and other._shape == self._shape else bcast
            return _imperative.invoke_default(name, [self, other], out)[0]
        if isinstance(other, numeric_types):
            return _imperative.invoke_scalar(scalar, self, other, out)[0]
        return NotImplemented

    def _scalar_only(self, other, scalar: str):
        if isinstance(other, numeric_types):
            return _imperative.invoke_scalar(scalar, self, other)[0]
        return NotImplemented

    def __add__(self, o):
        return self._binary(o, "elemwise_add", "broadcast_add", "_plus_scalar")

    __radd__ = __add__

    def __iadd__(self, o):
        return self._binary(o, "elemwise_add", "broadcast_add", "_plus_scalar", self)

    def __sub__(self, o):
        return self._binary(o, "elemwise_sub", "broadcast_sub", "_minus_scalar")

    def __rsub__(self, o):
        return self._scalar_only(o, "_rminus_scalar")

    def __isub__(self, o):
        return self._binary(o, "elemwise_sub", "broadcast_sub", "_minus_scalar", self)

    def __mul__(self, o):
        return self._binary(o, "elemwise_mul", "broadcast_mul", "_mul_scalar")

    __rmul__ = __mul__

    def __imul__(self, o):
        return self._binary(o, "elemwise_mul", "broadcast_mul", "_mul_scalar", self)

    def __truediv__(self, o):
        return self._binary(o, "elemwise_div", "broadcast_div", "_div_scalar")

    def __rtruediv__(self, o):
        return self._scalar_only(o, "_rdiv_scalar")

    def __itruediv__(self, o):
        return self._binary(o, "elemwise_div", "broadcast_div", "_div_scalar", self)

    __div__, __rdiv__, __idiv__ = __truediv__, __rtruediv__, __itruediv__

    def __mod__(self, o):
        return self._binary(o, None, "broadcast_mod", "_mod_scalar")

    def __rmod__(self, o):
        return self._scalar_only(o, "_rmod_scalar")

    def __imod__(self, o):
        return self._binary(o, None, "broadcast_mod", "_mod_scalar", self)

    def __pow__(self, o):
        return self._binary(o, None, "broadcast_power", "_power_scalar")

    def __rpow__(self, o):
        return self._scalar_only(o, "_rpower_scalar")

    def __neg__(self):
        return _imperative.invoke_scalar("_mul_scalar", self, -1.0)[0]

    def __pos__(self):
        return self

    def __abs__(self):
        return _imperative.invoke_name("abs", [self], _EMPTY, None)[0]

    def __eq__(self, o):
        return self._binary(o, None, "broadcast_equal", "_equal_scalar")

    def __ne__(self, o):
        return self._binary(o, None, "broadcast_not_equal", "_not_equal_scalar")

    def __gt__(self, o):
        return self._binary(o, None, "broadcast_greater", "_greater_scalar")

    def __ge__(self, o):
        return self._binary(o, None, "broadcast_greater_equal", "_greater_equal_scalar")

    def __lt__(self, o):
        return self._binary(o, None, "broadcast_lesser", "_lesser_scalar")

    def __le__(self, o):
        return self._binary(o, None, "broadcast_lesser_equal", "_lesser_equal_scalar")


def _record_view(op_name: str, x: NDArray, out: NDArray, **params) -> None:
    """Offer a view made while some thread records to autograd's recorder, as the operator it
    stands for (MXNet's ReshapeWithRecord / SliceWithRecord / AtWithRecord): views do not go
    through ``invoke``, which offers every other result. The recorder ignores it unless this
    thread records."""
    hook = _imperative._record_hook
    if hook is not None:
        op = _imperative.registry.get(op_name)
        hook(op, op.parse_params(params), [x], [out])


def _copy_property(src_ctx: Context, dst_ctx: Context) -> FnProperty:
    """Which copy workers move bytes between two devices (MXNet's ``CopyFromTo`` choice)."""
    if dst_ctx.device_type == "gpu":
        return FnProperty.COPY_TO_GPU
    if src_ctx.device_type == "gpu":
        return FnProperty.COPY_FROM_GPU
    return FnProperty.CPU_PRIORITIZED


def _nothing(run_ctx) -> None:
    """An empty write: pushed by ``wait_to_write`` to flush the readers queued before it."""


def _empty(shape, ctx, dtype) -> NDArray:
    """A new array whose memory is allocated later, by the first operation that writes it."""
    nbytes = math.prod(shape) * dtype.itemsize
    return NDArray(Chunk(nbytes, ctx, _engine.get().new_variable()), shape, dtype, 0)


def _memoryless(shape, ctx, dtype, stype: str = "default") -> NDArray:
    """An array that has a shape and dtype but no memory, for code that never reads it: a
    zero-size chunk, with a zero-strided read-only view of one zero as its numpy view (a value
    a backward op reads only for its shape, a data input a CachedOp takes from its caller).
    A sparse ``stype`` gives a sparse array with no stored entries (which keeps the backward
    op's storage inference right: ``take`` of a row_sparse array has a row_sparse gradient)."""
    if stype != "default":
        from .sparse import new_sparse  # noqa: PLC0415 - sparse.py imports this module
        return new_sparse(stype, shape, ctx, dtype)
    dtype = np.dtype(dtype)
    arr = NDArray(Chunk(0, ctx, _engine.get().new_variable()), tuple(shape), dtype, 0)
    arr._np = np.broadcast_to(np.zeros((), dtype), tuple(shape))
    return arr


def _from_numpy(source: np.ndarray, ctx=None) -> NDArray:
    """A new array holding a copy of ``source`` (same dtype), written now on the calling thread.

    A brand-new variable has nothing queued on it, so the copy needs no engine operation.
    """
    if ctx is None:
        ctx = current_context()
    elif isinstance(ctx, str):
        ctx = _parse_context(ctx)
    arr = _empty(tuple(int(d) for d in source.shape), ctx, normalize_dtype(source.dtype))
    arr._data()[...] = source
    return arr


def _parse_context(text: str) -> Context:
    """``'cpu(0)'`` -> ``cpu(0)`` (contexts travel as strings in pickles and op attributes)."""
    name, _, rest = text.partition("(")
    return Context(name.strip(), int(rest.rstrip(")") or 0))


from . import imperative as _imperative  # noqa: E402 - needs NDArray defined
from . import indexing as _indexing  # noqa: E402 - needs NDArray defined
from . import methods as _methods  # noqa: E402, F401 - binds a.sum(), a.exp(), ... (operator methods)

# MXNet's storage-type ids (``NDArrayStorageType``), under the names MXNet's scripts import.
_STORAGE_TYPE_UNDEFINED, _STORAGE_TYPE_DEFAULT, _STORAGE_TYPE_ROW_SPARSE, _STORAGE_TYPE_CSR = -1, 0, 1, 2
_STORAGE_TYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}
# MXNet's ndarray module defines an operator called ``slice``, so it keeps the builtin as
# ``py_slice``; its tests import that name.
py_slice = slice
