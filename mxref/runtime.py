"""MXNet's ``mx.runtime.Features``: which optional capabilities this mxref has, by MXNet's names.

MXNet reports the features its native library was compiled with. mxref compiles no native library
with build switches, so each feature here answers whether mxref *has* the capability: ``CUDA``
when a GPU backend finds a device, ``DIST_KVSTORE`` when mpi4py is importable, ``PROFILER`` and
``LAPACK`` always; instruction-set, vendor-library and build flags (``CPU_AVX``, ``MKLDNN``,
``TVM_OP``, ...) are off.
"""
from __future__ import annotations

import collections
import importlib.util

__all__ = ["Feature", "Features", "feature_list"]

# MXNet 1.9.1's feature names (libinfo.h), in its order.
_NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
          "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
          "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
          "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
          "SIGNAL_HANDLER", "DEBUG", "TVM_OP")


def _has_gpu() -> bool:
    from .context import num_gpus  # the GPU runtime loads on first use, not at import
    return num_gpus() > 0


def _enabled() -> dict:
    on = {
        "CUDA": _has_gpu(),
        "LAPACK": True,                      # numpy.linalg
        "PROFILER": True,                    # mxref.profiler
        "DIST_KVSTORE": importlib.util.find_spec("mpi4py") is not None,
        # shapes and indices are numpy's 64-bit integers, so arrays past 2**31 elements work
        "INT64_TENSOR_SIZE": True,
    }
    return {name: on.get(name, False) for name in _NAMES}


class Feature:
    """One capability: ``name`` and ``enabled``."""

    __slots__ = ("name", "enabled")

    def __init__(self, name: str, enabled: bool):
        self.name, self.enabled = name, bool(enabled)

    def __repr__(self):
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def feature_list() -> list:
    """Every feature as a ``Feature``, in MXNet's order."""
    return [Feature(name, on) for name, on in _enabled().items()]


class Features(collections.OrderedDict):
    """Name -> ``Feature`` for every feature (one shared instance, as in MXNet)."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super(Features, cls.instance).__init__((f.name, f) for f in feature_list())
        return cls.instance

    def __init__(self):                      # filled once, in __new__
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether the named feature is on; ``RuntimeError`` for a name MXNet does not know."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{name}' is unknown, known features are: {list(self.keys())}")
        return self[name].enabled
