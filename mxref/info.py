"""``mxref.info()``: versions, active fast paths and why, engine type and thread counts."""
from __future__ import annotations

import os
import platform
import sys

import numpy as np


def _optional_version(module: str) -> str:
    try:
        mod = __import__(module)
    except Exception as exc:  # noqa: BLE001 - an optional dependency may fail in any way
        return f"not available ({type(exc).__name__})"
    return getattr(mod, "__version__", "installed")


def _gpu_lines() -> dict:
    """The GPU backend (``MXREF_CUDA``), its launcher and driver, and one line per device."""
    from ._ext.cuda import runtime  # noqa: PLC0415
    lines = {"gpu.backend": runtime.backend_name()}
    be = runtime.backend(required=False)
    if be is not None:
        from .ops.gpu.gemm import gemm_path  # noqa: PLC0415
        for key, value in be.describe().items():
            lines[f"gpu.{key}"] = value
        lines["gpu.gemm"] = gemm_path()
        for i in range(be.device_count()):
            free, total = be.mem_info(i)
            lines[f"gpu.{i}"] = f"{be.device_name(i)}, {free >> 20} of {total >> 20} MiB free"
    return lines


def info(file=None) -> dict:
    """Print (and return) what this mxref runs with.

    Shows versions, which fast paths are active and why (Cython or pure Python, selected by the
    one switch, ``MXREF_ENABLE_EXT`` / ``MXREF_ENFORCE_EXT`` or a ``reference_kernels()`` block),
    every registered fast kernel and whether it runs, whether ``mx.nd`` dispatch and autograd's
    backward take the tuned or the plain reference paths (``MXREF_PLAIN_PATHS``), the engine type
    and its thread counts, the operator threads and BLAS threads, the storage pools and the number
    of GPUs.
    """
    from . import __version__, engine, storage  # noqa: PLC0415
    from ._ext import loader, switch  # noqa: PLC0415
    from .context import num_gpus  # noqa: PLC0415
    from .ndarray import imperative  # noqa: PLC0415
    from .ops import blas, parallel, registry  # noqa: PLC0415

    eng = engine.get()
    storage.get_manager(__import__("mxref").cpu())   # make sure the CPU pool's choice is recorded
    report = {
        "mxref": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": np.__version__,
        "mpi4py": _optional_version("mpi4py"),
        "pycuda": _optional_version("pycuda"),
        "gpus": num_gpus(),
    }
    report.update(_gpu_lines())
    desc = eng.describe() if hasattr(eng, "describe") else {"type": eng.name}
    for key, value in desc.items():
        report[f"engine.{key}"] = value
    report["operator threads"] = parallel.NUM_THREADS
    blas_threads = blas.get_num_threads()
    report["blas"] = "not a controllable OpenBLAS" if blas_threads is None else \
        f"OpenBLAS, {blas_threads} thread(s)" + (", GEMMs split over operator threads"
                                                 if parallel.SPLIT_GEMMS else "")
    report["gil switch interval"] = f"{sys.getswitchinterval() * 1e6:.0f} µs" + \
        (" (MXREF_GIL_SWITCH_US)" if parallel.GIL_SWITCH_INTERVAL is not None else " (Python's own)")
    for name, (path, reason) in sorted(loader.STATUS.items()):
        report[f"ext.{name}"] = f"{path} ({reason})"
    report["kernels"] = (f"reference only ({switch.reason()})" if switch.reference_only() else
                         "fast kernels where registered, else the numpy reference")
    for k in registry.list_kernels():
        active = k.device != "cpu" or not switch.reference_only()
        report[f"kernel.{k.device}.{k.op}"] = f"{k.name} ({'active' if active else 'inactive'}; " + \
            ("same bits as the reference)" if k.exact else "within a stated tolerance)")
    report["dispatch"] = imperative.selected_paths()     # invoke and backward: tuned or plain
    for ctx, text in storage.describe().items():
        report[f"storage.{ctx}"] = text
    flags = {k: v for k, v in sorted(os.environ.items()) if k.startswith(("MXNET_", "MXREF_"))}
    for key, value in flags.items():
        report[f"env.{key}"] = value
    width = max(map(len, report))
    for key, value in report.items():
        print(f"{key:<{width}} : {value}", file=file)
    return report
