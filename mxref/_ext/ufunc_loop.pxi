# A ufunc's inner loop called directly (included by dispatch_core): ``c = a + b`` on small arrays
# without numpy's ufunc machinery.
#
# ``np.add(a, b, out)`` on ten float32s spends ~3,000 instructions choosing and preparing a loop
# (argument parsing, overrides, type resolution, the overlap check, buffering decisions) and a
# few dozen running it. For a plan whose kernel is one of ``DIRECT_UFUNCS`` on contiguous arrays
# of one native numeric dtype, all of that is the same at every call, so ``loop_for`` does it
# once: it finds the loop in the ufunc's own table (``ufunc.types`` / ``functions`` / ``data``,
# the legacy table numpy itself wraps for these dtypes) and the plan keeps it. ``run_loop`` then
# calls the function on the arrays' data pointers, as numpy does for contiguous operands (one
# call over all elements). A scalar operand (``a + 1``: ``_plus_scalar``) is a stride-0 operand
# holding the scalar converted to the dtype once, as numpy converts a Python scalar (NEP 50).
#
# Anything numpy would treat differently takes numpy: arrays whose memory partly overlaps (numpy
# copies first), a read-only output, a misaligned or non-array buffer, a scalar that does not fit
# the dtype. Floating-point errors are reported as numpy reports them (``np.seterr`` /
# ``np.errstate``: warn, raise, call, print, log), by ``fp_report`` from the CPU's status flags.
# The results are bit-identical to numpy's (tests/_ext/test_ufunc_loop.py runs every dtype).
cimport numpy as cnp
from libc.string cimport memcpy

import sys as _sys
import warnings as _warnings

import numpy as _np

cdef extern from "<fenv.h>" nogil:
    int feclearexcept(int excepts)
    int fetestexcept(int excepts)
    int FE_DIVBYZERO, FE_OVERFLOW, FE_UNDERFLOW, FE_INVALID

cdef int _FE_ALL = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID

# The ufuncs whose loops are called directly: exact arithmetic, one legacy loop per dtype, which is
# the loop numpy runs for same-dtype contiguous operands.
DIRECT_UFUNCS = (_np.add, _np.subtract, _np.multiply)
# The numeric types a loop may be taken for (bool, strings, objects, datetimes: numpy's path).
cdef tuple _DIRECT_TYPES = tuple(_np.dtype(t).num for t in (
    _np.float16, _np.float32, _np.float64, _np.int8, _np.int16, _np.int32, _np.int64,
    _np.uint8, _np.uint16, _np.uint32, _np.uint64))


cdef class UfuncLoop:
    """One ufunc's inner loop on one plan's operands: ``nin`` inputs (one may be a scalar, held
    here) and one output of ``size`` elements of ``dtype``."""

    cdef cnp.PyUFuncGenericFunction fn
    cdef void* data
    cdef readonly object ufunc, dtype
    cdef readonly int nin                # the ufunc's inputs (1 or 2), the scalar included
    cdef readonly int scalar_at          # the input that is the scalar, -1: none
    cdef cnp.npy_intp size, itemsize
    cdef char scalar[16]                 # the scalar, converted to ``dtype``

    def __repr__(self):
        return (f"UfuncLoop({self.ufunc.__name__}, {self.dtype}, size={self.size}, "
                f"scalar_at={self.scalar_at})")


cdef object loop_for(object ufunc, object dtype, Py_ssize_t size, int scalar_at, object scalar):
    """The ``UfuncLoop`` of ``ufunc`` on operands of ``dtype`` (``size`` elements; the input at
    ``scalar_at`` the Python number ``scalar``), or ``None`` for numpy's path."""
    cdef cnp.ufunc u
    cdef UfuncLoop loop
    cdef int i, k, nargs, num
    if not any(ufunc is d for d in DIRECT_UFUNCS) or not isinstance(dtype, _np.dtype):
        return None
    if not dtype.isnative or dtype.num not in _DIRECT_TYPES:
        return None
    u = <cnp.ufunc>ufunc
    if u.nout != 1 or u.nin not in (1, 2) or size < 0:
        return None
    nargs, num = u.nargs, dtype.num
    for i in range(u.ntypes):
        if all(<int>u.types[i * nargs + k] == num for k in range(nargs)):
            break
    else:
        return None
    loop = UfuncLoop.__new__(UfuncLoop)
    loop.fn = <cnp.PyUFuncGenericFunction>u.functions[i]
    loop.data = u.data[i]
    loop.ufunc, loop.dtype, loop.nin, loop.scalar_at = ufunc, dtype, u.nin, scalar_at
    loop.size, loop.itemsize = size, dtype.itemsize
    if scalar_at >= 0:
        if scalar_at >= u.nin or loop.itemsize > 16:
            return None
        # numpy's conversion of a Python scalar (NEP 50): to the array's dtype; an integer out of
        # its range is numpy's error (the kernel reports it), a float overflowing it numpy's too.
        if dtype.kind in "iu":
            s = int(scalar)
            info = _np.iinfo(dtype)
            if not info.min <= s <= info.max:
                return None
            value = _np.array(s, dtype=dtype)
        else:
            s = float(scalar)
            with _np.errstate(all="ignore"):
                value = _np.array(s, dtype=dtype)
            if _np.isfinite(s) and not _np.isfinite(value):
                return None
        memcpy(loop.scalar, cnp.PyArray_DATA(<cnp.ndarray>value), loop.itemsize)
    return loop


cdef char* _operand(object x, Py_ssize_t nbytes, bint write) except? NULL:
    """The data pointer of NDArray ``x`` for a loop over ``nbytes``, its memory allocated first if
    it has none; ``NULL`` (no error set) when numpy's path must take it."""
    cdef object view, chunk, handle, buf
    cdef cnp.ndarray a
    cdef Py_ssize_t offset
    if type(x) is not NDArray:
        return NULL
    view = _get(x, ND_NP)
    if view is not None:                 # the cached typed view (NDArray._data's)
        if type(view) is not cnp.ndarray:
            return NULL
        a = <cnp.ndarray>view
        offset = 0
    else:
        chunk = _get(x, ND_CHUNK)
        if _get(chunk, CH_HANDLE) is None:
            _lend_to(chunk)
        handle = _get(chunk, CH_HANDLE)
        if type(handle) is not Handle:
            return NULL
        buf = _get(handle, HD_BUFFER)
        if type(buf) is not cnp.ndarray:
            return NULL
        a = <cnp.ndarray>buf
        offset = _get(x, ND_OFFSET)
    if (not cnp.PyArray_IS_C_CONTIGUOUS(a) or (write and not cnp.PyArray_ISWRITEABLE(a))
            or offset < 0 or offset + nbytes > cnp.PyArray_NBYTES(a)):
        return NULL
    return <char*>cnp.PyArray_DATA(a) + offset


cdef bint run_loop(UfuncLoop loop, list arrays) except -1:
    """Run ``loop`` over ``arrays`` (its array inputs, then the output); ``False`` when numpy's
    path must (nothing was written then)."""
    cdef char* args[3]
    cdef cnp.npy_intp steps[3]
    cdef cnp.npy_intp n = loop.size
    cdef Py_ssize_t nbytes = n * loop.itemsize, i, j = 0, m = len(arrays)
    cdef char* out
    cdef int flags
    if m != loop.nin + 1 - (loop.scalar_at >= 0):
        return False
    out = _operand(arrays[m - 1], nbytes, True)
    if out is NULL:
        return False
    for i in range(loop.nin):
        if i == loop.scalar_at:
            args[i] = loop.scalar
            steps[i] = 0
            continue
        args[i] = _operand(arrays[j], nbytes, False)
        j += 1
        # An input that partly overlaps the output: numpy copies it first. The same memory
        # (``a += b`` on ``a``) is what an elementwise loop does in place.
        if args[i] is NULL or (args[i] != out and args[i] < out + nbytes and out < args[i] + nbytes):
            return False
        if <size_t>args[i] % <size_t>loop.itemsize:
            return False
        steps[i] = loop.itemsize
    if <size_t>out % <size_t>loop.itemsize:
        return False
    args[loop.nin] = out
    steps[loop.nin] = loop.itemsize
    feclearexcept(_FE_ALL)
    loop.fn(args, &n, steps, loop.data)
    flags = fetestexcept(_FE_ALL)
    if flags:
        fp_report(loop.ufunc.__name__, _numpy_status(flags))
    return True


cdef int _numpy_status(int flags) noexcept:
    """The CPU's floating-point status flags as numpy's error bits."""
    cdef int status = 0
    if flags & FE_DIVBYZERO:
        status |= 1
    if flags & FE_OVERFLOW:
        status |= 2
    if flags & FE_UNDERFLOW:
        status |= 4
    if flags & FE_INVALID:
        status |= 8
    return status


# numpy's floating-point error kinds, in the order it handles them: (seterr key, text, its bit).
_FP_KINDS = (("divide", "divide by zero", 1), ("over", "overflow", 2), ("under", "underflow", 4),
             ("invalid", "invalid value", 8))


def fp_report(name, int status):
    """Report the floating-point errors ``status`` (numpy's bits) of ufunc ``name`` as numpy does
    after a loop, following ``np.seterr`` / ``np.errstate``."""
    modes = _np.geterr()
    for key, text, bit in _FP_KINDS:
        if not status & bit or modes[key] == "ignore":
            continue
        mode, msg = modes[key], f"{text} encountered in {name}"
        if mode == "warn":
            _warnings.warn(msg, RuntimeWarning, stacklevel=2)
        elif mode == "raise":
            raise FloatingPointError(msg)
        elif mode == "call":
            fn = _np.geterrcall()
            if not callable(fn):
                raise NameError(f"python callback specified for {text} (in  {name}) but no function found.")
            fn(text, status)
        elif mode == "print":
            _sys.stderr.write(f"Warning: {msg}\n")
        elif mode == "log":
            log = _np.geterrcall()
            if not hasattr(log, "write"):
                raise NameError(f"log specified for {text} (in {name}) but no object with write "
                                "method found.")
            log.write(f"Warning: {msg}\n")
