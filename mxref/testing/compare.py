"""Comparing arrays in tests: MXNet's tolerances by dtype, ``assert_almost_equal`` and its variants."""
from __future__ import annotations

from typing import Dict

import numpy as np

from ..ndarray.ndarray import NDArray

# MXNet 1.9.1's defaults: a dtype's precision decides how close is close enough.
_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
_ATOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}
# powers of two, so ``x + eps / 2`` drops no bits of the step
_EPS = {np.dtype(np.float16): 2.0 ** -6, np.dtype(np.float32): 2.0 ** -9, np.dtype(np.float64): 2.0 ** -14}


def default_rtols() -> Dict[np.dtype, float]:
    return dict(_RTOL)


def default_atols() -> Dict[np.dtype, float]:
    return dict(_ATOL)


def default_numeric_eps() -> Dict[np.dtype, float]:
    return dict(_EPS)


def get_tolerance(dat, tol, default_tol: dict) -> float:
    """``tol`` if a number, else its (or the default) entry for ``dat``'s dtype (integers: 0)."""
    if isinstance(tol, (int, float)):
        return tol
    dtype = np.dtype(getattr(dat, "dtype", np.float64))
    return (tol or {}).get(dtype, default_tol.get(dtype, 0))


def get_tols(x, y, rtol, atol):
    """The looser of the two arrays' tolerances (a float32 vs float64 comparison uses float32's)."""
    x = np.asarray(x) if isinstance(x, (int, float)) else x
    y = np.asarray(y) if isinstance(y, (int, float)) else y
    return (max(get_tolerance(x, rtol, _RTOL), get_tolerance(y, rtol, _RTOL)),
            max(get_tolerance(x, atol, _ATOL), get_tolerance(y, atol, _ATOL)))


def get_rtol(rtol=None, dtype=np.dtype(np.float64)) -> float:
    return _RTOL[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)) -> float:
    return _ATOL[np.dtype(dtype)] if atol is None else atol


def _host(a) -> np.ndarray:
    return a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)


def same(a, b) -> bool:
    """Exactly equal values (and shapes)."""
    return np.array_equal(_host(a), _host(b))


def almost_equal(a, b, rtol=None, atol=None, equal_nan: bool = False) -> bool:
    a, b = _host(a), _host(b)
    return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan: bool = False,
                        use_broadcast: bool = True, mismatches=(10, 10)) -> None:
    """Assert ``|a - b| <= atol + rtol * |b|`` elementwise, with tolerances chosen by dtype.

    ``rtol``/``atol`` may be numbers or ``{dtype: tol}`` dicts; ``None`` takes MXNet's defaults
    (float32: 1e-4 / 1e-3, float64: 1e-5 / 1e-20). The error names the worst element and how
    many elements are off.
    """
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _host(a), _host(b)
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError(f"{names[0]}.shape = {a.shape} and {names[1]}.shape = {b.shape} are not equal")
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        np.testing.assert_equal(a, b)
        return
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    diff = np.where(a64 == b64, 0.0, np.abs(a64 - b64))
    if equal_nan:
        diff = np.where(np.isnan(a64) & np.isnan(b64), 0.0, diff)
    violation = np.nan_to_num(diff / (atol + rtol * np.abs(b64) + 1e-20), nan=np.inf)
    where = np.unravel_index(int(np.argmax(violation)), violation.shape) if violation.ndim else ()
    bad = int(np.sum(violation > 1))
    raise AssertionError(
        f"Error {float(violation[where]):f} exceeds tolerance rtol={rtol:e}, atol={atol:e} "
        f"(mismatch {100.0 * bad / max(violation.size, 1):f}%).\nLocation of maximum error: {where}, "
        f"{names[0]}={float(a64[where]):.8f}, {names[1]}={float(b64[where]):.8f}\n"
        f" {names[0]}: {np.array2string(a, threshold=8, edgeitems=2)}\n"
        f" {names[1]}: {np.array2string(b, threshold=8, edgeitems=2)}")


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan: bool = True) -> None:
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_exception(f, exception_type, *args, **kwargs) -> None:
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise {exception_type.__name__}")


def almost_equal_ignore_nan(a, b, rtol=None, atol=None) -> bool:
    """``almost_equal`` after zeroing every position where either array is NaN."""
    a, b = np.copy(_host(a)), np.copy(_host(b))
    nan = np.isnan(a) | np.isnan(b)
    a[nan], b[nan] = 0, 0
    return almost_equal(a, b, rtol, atol)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")) -> None:
    """``assert_almost_equal`` after zeroing every position where either array is NaN."""
    a, b = np.copy(_host(a)), np.copy(_host(b))
    nan = np.isnan(a) | np.isnan(b)
    a[nan], b[nan] = 0, 0
    assert_almost_equal(a, b, rtol, atol, names)


def get_etol(etol=None) -> float:
    """The tolerated fraction of mismatching elements (0 unless given)."""
    return 0 if etol is None else etol


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan: bool = False, mismatches=(10, 10)) -> None:
    """Like ``assert_almost_equal``, but up to a fraction ``etol`` of the elements may be off.

    Meant for kernels whose rounding differs in rare elements (e.g. float16 reductions).
    """
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _host(a), _host(b)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    err = 1 - np.count_nonzero(close) / max(close.size, 1)
    if err > etol:
        try:
            assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan)
        except AssertionError as exc:
            raise AssertionError(f"{100 * err:f}% of the elements differ (tolerated: "
                                 f"{100 * etol:f}%). {exc}") from None


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """Whether two NDArrays share memory: a change written through one shows in the other."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def effective_dtype(dat) -> np.dtype:
    """The dtype whose tolerances suit comparisons of ``dat``.

    MXNet returns float16 for float32 data on GPUs that compute float32 matrix products in TF32
    (compute capability 8.0 and up); mxref's kernels compute float32 in float32 on every device,
    so it is always ``dat``'s own dtype.
    """
    return np.dtype(dat.dtype)
