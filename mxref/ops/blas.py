"""Control of numpy's BLAS thread count, so that operator threads, not BLAS, split a GEMM.

MXNet has one pool of operator threads (OpenMP); numpy's OpenBLAS has a pool of its own, whose
threads busy-wait for ~0.1 s after every call. Next to mxref's operator threads (and on a busy
machine) those spinning threads take the cores the other work needs: a LeNet step at two threads
was measured up to 6x slower with OpenBLAS at two threads than at one. So when mxref has several
operator threads to split GEMMs over (``mxref/ops/parallel.py``), it sets OpenBLAS to one thread
when it is imported; ``MXREF_BLAS_SPLIT=0`` leaves BLAS threading to the BLAS library instead.

The library is found the way ``threadpoolctl`` finds it: the OpenBLAS shared object numpy loaded
(listed in ``/proc/self/maps``, or bundled in ``numpy.libs``), called through ``ctypes``.
"""
from __future__ import annotations

import ctypes
import glob
import os
from typing import Optional

# numpy's wheels bundle OpenBLAS with prefixed symbols; a system OpenBLAS has the plain names.
_SET_NAMES = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
              "openblas_set_num_threads64_", "openblas_set_num_threads")
_GET_NAMES = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
              "openblas_get_num_threads64_", "openblas_get_num_threads")

_lib: Optional[ctypes.CDLL] = None
_searched = False


def _candidates():
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                name = os.path.basename(line.split()[-1]).lower()
                if "openblas" in name and (".so" in name or name.endswith(".dylib")):
                    yield line.split()[-1]
    except OSError:
        pass
    import numpy  # noqa: PLC0415 - only to locate its bundled libraries
    yield from glob.glob(os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs", "*openblas*"))


def _library() -> Optional[ctypes.CDLL]:
    """numpy's OpenBLAS, or ``None`` (another BLAS, or not loadable)."""
    global _lib, _searched
    if not _searched:
        _searched = True
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            if any(hasattr(lib, n) for n in _SET_NAMES) and any(hasattr(lib, n) for n in _GET_NAMES):
                _lib = lib
                break
    return _lib


def _call(names, *args) -> int:
    lib = _library()
    fn = next(getattr(lib, n) for n in names if hasattr(lib, n))
    return fn(*args)


def get_num_threads() -> Optional[int]:
    """OpenBLAS's current thread count, or ``None`` when numpy's BLAS is not a controllable OpenBLAS."""
    return None if _library() is None else _call(_GET_NAMES)


def set_num_threads(n: int) -> None:
    """Set OpenBLAS's thread count (process-wide); a no-op for another BLAS."""
    if _library() is not None:
        _call(_SET_NAMES, ctypes.c_int(int(n)))


def split_enabled() -> bool:
    """Whether operator threads may split GEMMs: ``MXREF_BLAS_SPLIT`` is not ``0`` and numpy's
    BLAS is an OpenBLAS whose threads mxref can turn down."""
    return os.environ.get("MXREF_BLAS_SPLIT", "1") != "0" and _library() is not None
