"""Raw device allocators under the pools: aligned numpy buffers on CPU, the GPU runtime's on GPU.

A device allocator has three methods: ``alloc(nbytes) -> block``, ``free(block, nbytes)`` and
``mem_info() -> (free_bytes, total_bytes)``. Running out of memory raises ``OutOfMemory``, which
the pool answers with release-all-and-retry.
"""
from __future__ import annotations

import os
import threading
from typing import Optional, Tuple

import numpy as np

from ..base import MXNetError

__all__ = ["OutOfMemory", "ALIGNMENT", "CPUDevice", "GPUDevice", "physical_memory"]

# 64 bytes: a cache line and the widest SIMD load (AVX-512), as MXNet's MKLDNN build uses.
ALIGNMENT = 64


class OutOfMemory(MemoryError):
    """The device could not provide a block (a real failure or a simulated cap)."""


def physical_memory() -> int:
    """Bytes of physical memory on this machine (0 if the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0


class CPUDevice:
    """Host memory as 64-byte aligned ``uint8`` numpy arrays.

    ``limit`` caps the bytes this allocator may hold at once (``MXREF_CPU_MEM_LIMIT``; tests use it
    to simulate running out of memory). Without a limit, ``mem_info`` counts against physical
    memory and only the operating system can refuse an allocation.
    """

    def __init__(self, limit: Optional[int] = None):
        if limit is not None and limit < 0:
            raise MXNetError(f"storage: CPU memory limit must be >= 0, got {limit}")
        self.limit = limit
        self.total = limit if limit is not None else physical_memory()
        self.bytes_held = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        # NOTE: the pool already serialises calls; this lock keeps direct users (tests) honest too.
        self._lock = threading.Lock()

    def alloc(self, nbytes: int) -> np.ndarray:
        with self._lock:
            if self.limit is not None and self.bytes_held + nbytes > self.limit:
                raise OutOfMemory(f"cpu limit {self.limit} bytes reached ({self.bytes_held} held, "
                                  f"{nbytes} requested)")
            self.bytes_held += nbytes
        try:
            raw = np.empty(nbytes + ALIGNMENT - 1, dtype=np.uint8)
        except MemoryError as exc:
            with self._lock:
                self.bytes_held -= nbytes
            raise OutOfMemory(f"the operating system refused {nbytes} bytes: {exc}") from None
        offset = -raw.ctypes.data % ALIGNMENT
        with self._lock:
            self.num_device_alloc += 1
        return raw[offset:offset + nbytes]

    def free(self, block: np.ndarray, nbytes: int) -> None:
        # The memory goes back to the system once the last reference (a view, perhaps) is dropped.
        with self._lock:
            self.bytes_held -= nbytes
            self.num_device_free += 1

    def mem_info(self) -> Tuple[int, int]:
        """``(free, total)`` as this allocator sees it: total minus what it holds."""
        return max(self.total - self.bytes_held, 0), self.total


class GPUDevice:
    """Device memory of one GPU through the GPU runtime (``mxref._ext.cuda.runtime``): PyCUDA's
    ``mem_alloc`` on a real GPU, host memory under ``MXREF_CUDA=emulate``. Blocks are
    ``DeviceBuffer``s (a device address, a size and the device id).

    The runtime is imported here, on the first GPU allocation, never at ``import mxref``.
    """

    def __init__(self, device_id: int):
        self.device_id = device_id
        self.bytes_held = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self._rt = None
        self._lock = threading.Lock()

    def _runtime(self):
        if self._rt is None:
            from .._ext.cuda import runtime  # noqa: PLC0415 - the GPU runtime loads on first use
            count = runtime.num_devices()
            if count <= self.device_id:
                raise MXNetError(f"storage: gpu({self.device_id}) is not available (num_gpus()={count}; "
                                 f"GPU backend: {runtime.backend_name()})")
            self._rt = runtime
        return self._rt

    def alloc(self, nbytes: int):
        rt = self._runtime()
        try:
            ptr, owner = rt.backend().alloc(self.device_id, nbytes)
        except MemoryError as exc:
            raise OutOfMemory(f"cudaMalloc of {nbytes} bytes on gpu({self.device_id}) failed: "
                              f"{exc}") from None
        with self._lock:
            self.bytes_held += nbytes
            self.num_device_alloc += 1
        return rt.DeviceBuffer(ptr, nbytes, self.device_id, owner)

    def free(self, block, nbytes: int) -> None:
        self._runtime().backend().free(self.device_id, block.owner, nbytes)
        block.owner = None
        with self._lock:
            self.bytes_held -= nbytes
            self.num_device_free += 1

    def mem_info(self) -> Tuple[int, int]:
        return self._runtime().backend().mem_info(self.device_id)
