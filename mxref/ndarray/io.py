"""``mx.nd.save`` / ``load`` / ``load_frombuffer`` in MXNet's binary NDArray list format.

Layout (little-endian), as ``NDArray::Save`` in MXNet 1.9.1 ``src/ndarray/ndarray.cc`` writes it::

    file   := uint64 0x112 | uint64 0 | uint64 n | array * n | uint64 k | name * k   (k = 0 or n)
    name   := uint64 len | len bytes (utf-8)
    array  := uint32 magic | int32 stype | shape | ctx | int32 dtype_flag | raw data
    shape  := int32 ndim | int64 * ndim
    ctx    := int32 dev_type | int32 dev_id

``magic`` is 0xF993FAC9 (V2). mxref also reads V3 (0xF993FACA, numpy shape semantics, 0-d arrays),
V1 (0xF993FAC8, no storage type) and the oldest layout, where the first word is ``ndim`` and
dimensions are uint32.

Sparse arrays (``stype`` 1 = ``row_sparse``, 2 = ``csr``) save and load as sparse arrays, as in
MXNet: after ``stype`` comes the storage shape (the stored values' shape), and after the dtype
one ``int32 aux_dtype | shape`` per index array (row_sparse: row ids; csr: ``indptr`` then column
ids), then the values, then each index array's data. Loading checks every count against the
file's bytes before reading it and validates the indices (in range, ``indptr`` rising) before the
array is made, so a crafted file can neither allocate more than it holds nor yield an invalid
sparse array.
"""
from __future__ import annotations

import os
import struct
from typing import Dict, List, Union

import numpy as np

from ..base import DTYPE_MX_TO_NP, DTYPE_NP_TO_MX, MXNetError
from ..context import cpu
from ..ops.sparse.base import CSR, RowSparse
from ..util import is_np_shape, np_shape_mode
from .ndarray import NDArray, _from_numpy

__all__ = ["save", "load", "load_frombuffer", "save_tobuffer"]

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------

def _write_sparse(parts: list, arr) -> None:
    arr.wait_to_read()     # raises the errors of pending writes before anything is written
    value = arr._value()
    aux = [value.indices] if arr.stype == "row_sparse" else [value.indptr, value.indices]
    data = np.ascontiguousarray(value.data)
    # The storage shape: the stored values' shape. (MXNet 1.9.1 sometimes writes (0,) here for
    # csr arrays; both loaders recompute it from the index arrays.)
    parts.append(struct.pack("<Iii", V2_MAGIC, 1 if arr.stype == "row_sparse" else 2, data.ndim))
    parts.append(struct.pack(f"<{data.ndim}q", *data.shape))
    parts.append(struct.pack("<i", len(arr.shape)) + struct.pack(f"<{len(arr.shape)}q", *arr.shape))
    parts.append(struct.pack("<iii", 1, 0, DTYPE_NP_TO_MX[data.dtype]))
    for a in aux:
        parts.append(struct.pack("<iiq", DTYPE_NP_TO_MX[np.dtype(np.int64)], 1, a.size))
    parts.append(data.astype(data.dtype.newbyteorder("<"), copy=False).tobytes())
    for a in aux:
        parts.append(np.ascontiguousarray(a, dtype="<i8").tobytes())


def _write_array(parts: list, arr: NDArray) -> None:
    np_shape = is_np_shape()
    if arr._sparse:
        if np_shape:
            raise MXNetError("save: only arrays of default storage type can be saved under NumPy shape "
                             f"semantics, got a {arr.stype} array")
        _write_sparse(parts, arr)
        return
    host = arr.asnumpy()   # waits for pending writes; raises their errors before anything is written
    # NOTE: MXNet 1.x (V2) cannot represent 0-d arrays (ndim 0 means "no array"), so those are
    # written in V3, MXNet's numpy-shape layout, which mxref reads back; everything else is V2,
    # unless NumPy shape semantics is on, where MXNet writes every array in V3.
    magic = V3_MAGIC if host.ndim == 0 or np_shape else V2_MAGIC
    parts.append(struct.pack("<Iii", magic, 0, host.ndim))
    parts.append(struct.pack(f"<{host.ndim}q", *host.shape))
    parts.append(struct.pack("<iii", 1, 0, DTYPE_NP_TO_MX[host.dtype]))   # saved from cpu(0)
    parts.append(np.ascontiguousarray(host).astype(host.dtype.newbyteorder("<"), copy=False).tobytes())


def save_tobuffer(data) -> bytes:
    """The bytes ``save`` would write (MXNet's ``NDArray.save`` list/dict format)."""
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        names, arrays = list(data.keys()), list(data.values())
        if not all(isinstance(k, str) for k in names):
            raise MXNetError("save: dictionary keys must be strings")
    elif isinstance(data, (list, tuple)):
        names, arrays = [], list(data)
    else:
        raise MXNetError("save: data must be an NDArray, a list of NDArrays or a dict of str -> NDArray, "
                         f"got {type(data).__name__}")
    for a in arrays:
        if not isinstance(a, NDArray):
            raise MXNetError(f"save: every value must be an NDArray, got {type(a).__name__}")
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    for a in arrays:
        _write_array(parts, a)
    parts.append(struct.pack("<Q", len(names)))
    for n in names:
        raw = n.encode("utf-8")
        parts.append(struct.pack("<Q", len(raw)))
        parts.append(raw)
    return b"".join(parts)


def save(fname: Union[str, os.PathLike], data) -> None:
    """Save an NDArray, a list of them or a ``str -> NDArray`` dict in MXNet's binary format.

    The file loads in MXNet 1.x with ``mx.nd.load`` and back in mxref with :func:`load`.
    """
    blob = save_tobuffer(data)
    with open(fname, "wb") as f:
        f.write(blob)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

class _Reader:
    """A cursor over the bytes; every short read is a format error naming what was being read."""

    __slots__ = ("buf", "pos", "source")

    def __init__(self, buf, source: str):
        self.buf = memoryview(buf).cast("B")
        self.pos = 0
        self.source = source

    def take(self, n: int, what: str) -> memoryview:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise MXNetError(f"Invalid NDArray file format in {self.source}: truncated while reading "
                             f"{what} (need {n} bytes at offset {self.pos}, file has {len(self.buf)})")
        chunk = self.buf[self.pos:end]
        self.pos = end
        return chunk

    def unpack(self, fmt: str, what: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))


# MXNet's sizes are int64; numpy also needs elements * itemsize (at most 8 here) to fit.
_MAX_ELEMENTS = 1 << 60


def _bad(r: "_Reader", what: str, problem: str) -> MXNetError:
    return MXNetError(f"Invalid NDArray file format in {r.source}: {what} {problem}")


def _read_shape(r: _Reader, wide: bool, what: str):
    (ndim,) = r.unpack("<i", f"{what} ndim")
    if ndim < -1 or ndim > 32:
        raise _bad(r, what, f"has ndim {ndim}")
    if ndim <= 0:
        return ndim, ()
    shape = r.unpack(f"<{ndim}{'q' if wide else 'I'}", f"{what} dimensions")
    _check_shape(r, shape, what)
    return ndim, shape


def _check_shape(r: _Reader, shape, what: str) -> None:
    """Dimensions are non-negative and their product (zeros aside) at most 2^60."""
    nonzero = 1
    for axis, dim in enumerate(shape):
        if dim < 0:
            raise _bad(r, what, f"has dimension {dim} at axis {axis} (must be >= 0)")
        nonzero *= max(dim, 1)
    if nonzero > _MAX_ELEMENTS:
        raise _bad(r, what, f"{tuple(shape)} has more than 2^60 elements")


def _dtype(r: _Reader, flag: int, what: str) -> np.dtype:
    if flag not in DTYPE_MX_TO_NP:
        raise _bad(r, what, f"has unknown dtype flag {flag}")
    return DTYPE_MX_TO_NP[flag]


def _read_values(r: _Reader, flag: int, shape, what: str) -> np.ndarray:
    dtype = _dtype(r, flag, what)
    count = 1
    for dim in shape:           # Python ints: a product that would wrap in int64 stays exact
        count *= dim
    # NOTE: take() checks the byte count against what is left of the file before anything is
    # copied, so a declared size can never make us allocate more than the file holds.
    raw = r.take(count * dtype.itemsize, f"{what} ({count} x {dtype.name})")
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _read_sparse(r: _Reader, stype: int, shape, flag: int, what: str):
    """Read a sparse array's values and indices, validated, as a ``CSR`` / ``RowSparse`` value.

    ``row_sparse`` (stype 1) keeps whole rows plus their row indices; ``csr`` (stype 2) keeps
    nonzeros plus ``indptr`` and column indices (MXNet's aux order: indptr first).
    """
    naux = 1 if stype == 1 else 2
    if stype == 1 and len(shape) < 1:
        raise _bad(r, f"{what} shape", f"{tuple(shape)}: a row_sparse array needs at least one axis")
    if stype == 2 and len(shape) != 2:
        raise _bad(r, f"{what} shape", f"{tuple(shape)}: a csr array is 2-D")
    _dtype(r, flag, f"{what} dtype")
    aux_meta = []
    for i in range(naux):
        (aflag,) = r.unpack("<i", f"{what} aux {i} dtype")
        if aflag not in DTYPE_MX_TO_NP or DTYPE_MX_TO_NP[aflag].kind not in "iu":
            raise _bad(r, f"{what} aux {i} dtype", f"flag {aflag} is not an integer type")
        ashape = _read_shape(r, True, f"{what} aux {i} shape")[1]
        if len(ashape) != 1:
            raise _bad(r, f"{what} aux {i} shape", f"{tuple(ashape)} is not 1-D")
        aux_meta.append((aflag, ashape))
    # NOTE: the stored values' shape follows from the index arrays (as MXNet's loader computes it);
    # the saved storage shape cannot be trusted: MXNet 1.9.1 writes (0,) for csr arrays.
    if stype == 1:
        vshape = tuple(aux_meta[0][1][:1]) + tuple(shape[1:])
    else:
        vshape = tuple(aux_meta[1][1][:1])
        if aux_meta[0][1][0] != shape[0] + 1:
            raise _bad(r, f"{what} aux 0 (indptr) shape", f"{tuple(aux_meta[0][1])} does not match "
                       f"{shape[0]} rows")
    _check_shape(r, vshape, f"{what} data shape")
    values = _read_values(r, flag, vshape, f"{what} data")
    aux = [_read_values(r, aflag, ashape, f"{what} aux {i} data").astype(np.int64)
           for i, (aflag, ashape) in enumerate(aux_meta)]
    if stype == 1:
        rows = aux[0]
        if rows.size and (rows.min() < 0 or rows.max() >= shape[0]):
            raise _bad(r, f"{what} aux 0 (row ids)", f"has a row id outside [0, {shape[0]})")
        if rows.size > 1 and (np.diff(rows) <= 0).any():
            raise _bad(r, f"{what} aux 0 (row ids)", "must be sorted and unique")
        return RowSparse(values, rows, tuple(shape))
    indptr, cols = aux
    if indptr[0] != 0 or indptr[-1] != cols.size or (np.diff(indptr) < 0).any():
        raise _bad(r, f"{what} aux 0 (indptr)", f"must rise from 0 to the {cols.size} nonzeros")
    if cols.size and (cols.min() < 0 or cols.max() >= shape[1]):
        raise _bad(r, f"{what} aux 1 (column ids)", f"has a column outside [0, {shape[1]})")
    return CSR(values, cols, indptr, tuple(shape))


def _read_array(r: _Reader, index: int):
    what = f"array {index}"
    (magic,) = r.unpack("<I", f"{what} magic")
    stype = 0
    mode = np_shape_mode()
    if magic != V3_MAGIC and mode == 1:
        # MXNet's rule; only a global switch (mode 2) may read files of the other semantics.
        raise MXNetError(f"load: {what} in {r.source} was not saved under NumPy shape semantics, but is "
                         "being loaded under them; load it inside `with mx.np_shape(False)`")
    if magic in (V2_MAGIC, V3_MAGIC):
        (stype,) = r.unpack("<i", f"{what} storage type")
        if stype not in (0, 1, 2):
            raise MXNetError(f"Invalid NDArray file format in {r.source}: {what} has storage type {stype}")
        if stype:
            _read_shape(r, True, f"{what} storage shape")
        ndim, shape = _read_shape(r, True, f"{what} shape")
        if magic == V3_MAGIC and not mode and ndim > 0:
            # Saved under NumPy shape semantics (mxref itself writes V3 in legacy mode only for
            # 0-d arrays, which legacy V2 cannot hold).
            raise MXNetError(f"load: {what} in {r.source} was saved under NumPy shape semantics and must "
                             "be loaded under them; load it inside `with mx.np_shape(True)`")
        # V2 marks "no array" with ndim 0; V3 with ndim -1 (0 is a real 0-d array there).
        if (magic == V2_MAGIC and ndim == 0) or ndim == -1:
            return None
    elif magic == V1_MAGIC:
        ndim, shape = _read_shape(r, True, f"{what} shape")
        if ndim <= 0:
            return None
    else:
        if magic > 32:
            raise MXNetError(f"Invalid NDArray file format in {r.source}: {what} starts with unknown "
                             f"magic 0x{magic:X}")
        if magic == 0:
            return None
        shape = r.unpack(f"<{magic}I", f"{what} shape dimensions")
        _check_shape(r, shape, f"{what} shape")
    r.unpack("<ii", f"{what} context")
    (flag,) = r.unpack("<i", f"{what} dtype")
    if stype:
        from .sparse import _from_value  # noqa: PLC0415 - sparse.py imports this package
        value = _read_sparse(r, stype, shape, flag, what)
        return _from_value(value, cpu(0), value.data.dtype)
    return _from_numpy(_read_values(r, flag, shape, f"{what} data"), cpu(0))


def load_raw(buf, source: str = "buffer"):
    """One array from MXNet's raw single-array bytes (``MXNDArraySaveRawBytes``: an ``array`` of
    the layout above with no list header), which is what MXNet's pickled NDArrays hold."""
    r = _Reader(buf, source)
    arr = _read_array(r, 0)
    if r.pos != len(r.buf):
        raise MXNetError(f"Invalid NDArray file format in {source}: {len(r.buf) - r.pos} trailing bytes")
    return arr


def load_frombuffer(buf, source: str = "buffer") -> Union[List[NDArray], Dict[str, NDArray]]:
    """Load arrays from bytes in MXNet's format: a list, or a dict when the file carries names."""
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MXNetError(f"load_frombuffer: expected bytes, got {type(buf).__name__}")
    r = _Reader(buf, source)
    magic, _reserved = r.unpack("<QQ", "header")
    if magic != LIST_MAGIC:
        raise MXNetError(f"Invalid NDArray file format in {source}: magic 0x{magic:X}, expected 0x112")
    (count,) = r.unpack("<Q", "array count")
    if count > len(r.buf):
        raise MXNetError(f"Invalid NDArray file format in {source}: claims {count} arrays")
    arrays = [_read_array(r, i) for i in range(count)]
    (nnames,) = r.unpack("<Q", "name count")
    if nnames not in (0, count):
        raise MXNetError(f"Invalid NDArray file format in {source}: {nnames} names for {count} arrays")
    names = []
    for i in range(nnames):
        (length,) = r.unpack("<Q", f"name {i} length")
        raw = r.take(length, f"name {i}")
        try:
            names.append(bytes(raw).decode("utf-8"))
        except UnicodeDecodeError:
            raise MXNetError(f"Invalid NDArray file format in {source}: name {i} is not utf-8") from None
    if r.pos != len(r.buf):
        raise MXNetError(f"Invalid NDArray file format in {source}: {len(r.buf) - r.pos} trailing bytes")
    return dict(zip(names, arrays)) if names else arrays


def load(fname: Union[str, os.PathLike]) -> Union[List[NDArray], Dict[str, NDArray]]:
    """Load a file written by ``mx.nd.save`` (mxref's or MXNet's): a list, or a dict of named arrays."""
    try:
        with open(fname, "rb") as f:
            blob = f.read()
    except OSError as exc:
        raise MXNetError(f"load: cannot read {fname}: {exc}") from None
    return load_frombuffer(blob, str(fname))
