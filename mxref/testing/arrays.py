"""Random test data: dense arrays and shapes, sparse (csr / row_sparse) arrays, small numpy helpers."""
from __future__ import annotations

import numpy as np
import numpy.random as rnd

from ..base import MXNetError
from ..context import current_context
from ..ndarray import sparse_create
from ..ndarray.ndarray import NDArray
from ..ndarray.utils import arange, array


def random_arrays(*shapes):
    """Standard-normal float32 numpy arrays (one array, or a list for several shapes)."""
    arrays = [np.array(np.random.randn(), dtype=np.float32) if len(s) == 0 else
              np.random.randn(*s).astype(np.float32) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def rand_shape_2d(dim0: int = 10, dim1: int = 10, allow_zero_size: bool = False):
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0: int = 10, dim1: int = 10, dim2: int = 10, allow_zero_size: bool = False):
    low = 0 if allow_zero_size else 1
    return tuple(int(np.random.randint(low, d + 1)) for d in (dim0, dim1, dim2))


def rand_shape_nd(num_dim: int, dim: int = 10, allow_zero_size: bool = False):
    low = 0 if allow_zero_size else 1
    return tuple(int(d) for d in np.random.randint(low, dim + 1, size=num_dim))


def rand_ndarray(shape, stype: str = "default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices: bool = False, distribution=None, ctx=None) -> NDArray:
    """A random NDArray: standard normal values when dense, else ``rand_sparse_ndarray``'s."""
    ctx = ctx or current_context()
    if stype == "default":
        return array(random_arrays(tuple(shape)), ctx=ctx, dtype=dtype)
    return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype, modifier_func=modifier_func,
                               shuffle_csr_indices=shuffle_csr_indices, distribution=distribution,
                               ctx=ctx)[0]


def random_uniform_arrays(*shapes, low: float = 0.0, high: float = 1.0, dtype=np.float32):
    """A list of uniform ``[low, high)`` numpy arrays, one per shape."""
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k: int):
    """``k`` elements of ``population`` drawn without replacement (through ``np.random``)."""
    assert 0 <= k <= len(population)
    population = list(population)
    np.random.shuffle(population)
    return population[:k]


def rand_coord_2d(x_low: int, x_high: int, y_low: int, y_high: int):
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def create_vector(size: int, dtype=np.int64) -> NDArray:
    """``arange(size)`` as an NDArray (used by large-tensor tests)."""
    return arange(0, size, dtype=dtype)


def np_reduce(dat: np.ndarray, axis, keepdims: bool, numpy_reduce_func) -> np.ndarray:
    """Reduce ``dat`` over ``axis`` (an int, a list, or None for all) one axis at a time with a
    NumPy reducer such as ``np.sum``, keeping reduced axes as 1 when ``keepdims``."""
    axes = [axis] if isinstance(axis, int) else (list(axis) if axis is not None else range(dat.ndim))
    out = dat
    for i in sorted(axes, reverse=True):
        out = numpy_reduce_func(out, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axes:
            shape[i] = 1
        out = out.reshape(tuple(shape))
    return out


def collapse_sum_like(a: np.ndarray, shape) -> np.ndarray:
    """Sum ``a`` over the axes broadcasting added to reach it from ``shape`` (a broadcast's gradient)."""
    assert a.ndim >= len(shape)
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = a.ndim - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[lead + i]:
            assert s == 1, f"shape {tuple(shape)} does not broadcast to {a.shape}"
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def assign_each(the_input: np.ndarray, function) -> np.ndarray:
    """``function`` applied to every element (a copy when ``function`` is None)."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function, otypes=[np.float64])(the_input) if the_input.size else \
        np.zeros(the_input.shape)


def assign_each2(input1: np.ndarray, input2: np.ndarray, function) -> np.ndarray:
    """``function(x, y)`` applied to every pair of elements (a copy of ``input1`` when None)."""
    if function is None:
        return np.array(input1)
    assert input1.shape == input2.shape
    return np.vectorize(function, otypes=[np.float64])(input1, input2) if input1.size else \
        np.zeros(input1.shape)


# -- sparse ----------------------------------------------------------------------------------

def shuffle_csr_column_indices(csr) -> None:
    """Shuffle each row's column indices in place (a valid CSR needs no sorted indices)."""
    for i in range(len(csr.indptr) - 1):
        row = slice(csr.indptr[i], csr.indptr[i + 1])
        sub = np.array(csr.indices[row])
        np.random.shuffle(sub)
        csr.indices[row] = sub


def _uniform_csr(rows: int, cols: int, density: float, dtype, data_init, shuffle: bool, ctx):
    from scipy import sparse as spsp
    csr = spsp.random(rows, cols, density=density, dtype=dtype, format="csr",
                      random_state=np.random.randint(2 ** 31))
    if data_init is not None:
        csr.data.fill(data_init)
    if shuffle:
        shuffle_csr_column_indices(csr)
    return sparse_create.csr_matrix((csr.data, csr.indices, csr.indptr), shape=(rows, cols),
                                    ctx=ctx, dtype=dtype)


def _powerlaw_csr(rows: int, cols: int, density: float, dtype, ctx):
    """Row ``r`` holds about twice the non-zeros of row ``r - 1`` until ``density`` is reached."""
    budget = int(rows * cols * density)
    if budget < 2 * rows:
        raise ValueError(f"powerlaw needs at least 2 non-zeros per row: density {density} is too "
                         f"low for shape ({rows}, {cols})")
    out = np.zeros((rows, cols), dtype=dtype)
    for r in range(rows):                       # every row starts with one non-zero
        out[r, 0] = 1 + rnd.uniform(0.001, 2)
    budget -= rows
    width = 2
    for r in range(rows):
        limit = min(cols, width)
        if limit == cols and budget > limit:      # rows are full width from here on
            out[r] = 1 + rnd.uniform(0.001, 2)
            budget -= limit - 1
            continue
        for c in range(1, limit):
            if budget <= 0:
                break
            out[r, c] = 1 + rnd.uniform(0.001, 2)
            budget -= 1
        width *= 2
    if budget > 0:
        raise ValueError(f"powerlaw cannot place density {density} in shape ({rows}, {cols})")
    return array(out, ctx=ctx, dtype=dtype).tostype("csr")


def rand_sparse_ndarray(shape, stype: str, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices: bool = False, ctx=None):
    """A random sparse NDArray and its parts as numpy: ``(arr, (values, row_ids))`` for
    ``row_sparse``, ``(arr, (indptr, indices, data))`` for ``csr``.

    ``density`` (default: random) is the chance of a row (row_sparse) or element (csr) being stored;
    ``distribution`` is ``"uniform"`` or, for csr, ``"powerlaw"`` (row ``r`` holds about twice the
    non-zeros of row ``r - 1``).
    """
    ctx = ctx or current_context()
    density = rnd.rand() if density is None else density
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    distribution = distribution or "uniform"
    if stype == "row_sparse":
        if distribution != "uniform":
            raise MXNetError(f"rand_sparse_ndarray: distribution {distribution!r} is not supported "
                             "for row_sparse (only 'uniform')")
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices)
            assert len(indices) <= shape[0]
        else:
            indices = np.argwhere(rnd.rand(shape[0]) < density).flatten()
        if indices.shape[0] == 0:
            return (sparse_create.zeros("row_sparse", shape, ctx=ctx, dtype=dtype),
                    (np.array([], dtype=dtype), np.array([])))
        val = rnd.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        if modifier_func is not None:
            val = assign_each(val, modifier_func)
        arr = sparse_create.row_sparse_array((val, indices), shape=shape, ctx=ctx, dtype=dtype)
        return arr, (val, indices)
    if stype == "csr":
        assert len(shape) == 2, f"csr arrays are 2-d, got shape {shape}"
        if distribution == "uniform":
            csr = _uniform_csr(shape[0], shape[1], density, dtype, data_init, shuffle_csr_indices, ctx)
        elif distribution == "powerlaw":
            csr = _powerlaw_csr(shape[0], shape[1], density, dtype, ctx)
        else:
            raise MXNetError(f"rand_sparse_ndarray: unknown distribution {distribution!r}")
        return csr, (csr.indptr, csr.indices, csr.data)
    raise MXNetError(f"rand_sparse_ndarray: unknown storage type {stype!r} (csr or row_sparse)")


def create_sparse_array(shape, stype: str, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density: float = 0.5, shuffle_csr_indices: bool = False):
    """A random sparse NDArray; row_sparse ``rsp_indices`` are sorted first (canonical form)."""
    if stype == "row_sparse" and rsp_indices is not None:
        rsp_indices = np.sort(np.asarray(rsp_indices))
    if stype not in ("row_sparse", "csr"):
        raise AssertionError(f"Unknown storage type: {stype}")
    return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype, data_init=data_init,
                               rsp_indices=rsp_indices, modifier_func=modifier_func,
                               shuffle_csr_indices=shuffle_csr_indices)[0]


def create_sparse_array_zd(shape, stype: str, density: float, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices: bool = False):
    """``create_sparse_array`` where a row_sparse array's rows are exactly ``rsp_indices``."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None:
            assert len(rsp_indices) <= shape[0]
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)
