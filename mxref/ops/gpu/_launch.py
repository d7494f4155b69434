"""What every GPU kernel wrapper needs: the family's module, op codes, stream, grid, dtype checks."""
from __future__ import annotations

import functools
import re
from typing import Dict, Tuple

import numpy as np

from ..._ext.cuda import runtime
from ...base import MXNetError

__all__ = ["module", "opcodes", "stream", "grid_1d", "float_call", "accumulate", "BLOCK"]

BLOCK = 256                     # threads per block of the 1-D kernels (8 warps)


def module(family: str, dtype) -> runtime.SourceModule:
    return runtime.module(family, dtype)


@functools.lru_cache(maxsize=None)
def opcodes(family: str) -> Dict[str, int]:
    """The ``#define OP_<NAME> <code>`` table of ``kernels/<family>.cu``, by lower-case name: the
    .cu file is the one place the codes are written."""
    text = (runtime.KERNEL_DIR / f"{family}.cu").read_text()
    return {m.group(1).lower(): int(m.group(2))
            for m in re.finditer(r"^#define OP_(\w+) (\d+)$", text, re.M)}


def stream(octx):
    """The stream of the engine worker running this op (the device's default one otherwise)."""
    run_ctx = getattr(octx, "run_ctx", None)
    s = getattr(run_ctx, "stream", None)
    if s is None:
        ctx = getattr(octx, "ctx", None)
        s = runtime.default_stream(ctx.device_id if ctx is not None else 0)
    return s


def grid_1d(n: int) -> Tuple[Tuple[int], Tuple[int]]:
    """``(grid, block)`` for a grid-stride loop over ``n`` elements: enough blocks to cover ``n``
    up to the backend's cap (the emulator runs few big blocks; a GPU wants many)."""
    cap = runtime.backend().max_grid
    return (max(1, min((n + BLOCK - 1) // BLOCK, cap)),), (BLOCK,)


def float_call(params, inputs, outputs, req) -> bool:
    """``applies`` of most kernels: every array float32 or float64, all of one dtype."""
    dtypes = {a.dtype for a in (*inputs, *outputs)}
    return len(dtypes) == 1 and runtime.supports_dtype(next(iter(dtypes)))


def accumulate(req: str) -> int:
    """1 for ``req='add'``, 0 for write/inplace; ``req='null'`` is handled by the caller."""
    if req == "add":
        return 1
    if req in ("write", "inplace"):
        return 0
    raise MXNetError(f"unknown req {req!r}")


def as_dtype(value, dtype) -> float:
    return float(np.asarray(value, dtype=dtype))


class scratch:
    """Temporary device memory for one kernel call, from the device's pool (``with scratch(ctx,
    shape, dtype) as buf``); given back when the block ends. The launches inside the block have
    completed by then (the emulator runs them at once; the PyCUDA backend waits on its stream)."""

    def __init__(self, device_id: int, shape, dtype):
        self.device_id, self.shape, self.dtype = device_id, tuple(shape), np.dtype(dtype)

    def __enter__(self) -> runtime.DeviceArray:
        from ... import storage  # noqa: PLC0415
        from ...context import gpu  # noqa: PLC0415
        nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.handle = storage.alloc(max(nbytes, 1), gpu(self.device_id))
        return self.handle.buffer.view(self.shape, self.dtype)

    def __exit__(self, *exc):
        from ... import storage  # noqa: PLC0415
        storage.free(self.handle)
        return False


def sub(arr: runtime.DeviceArray, start: int, shape) -> runtime.DeviceArray:
    """The contiguous part of ``arr`` starting at flat element ``start``, viewed as ``shape``."""
    return runtime.DeviceArray(arr.buffer, tuple(shape), arr.dtype, arr.offset + start * arr.dtype.itemsize)
