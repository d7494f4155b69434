"""Raw device allocators under the pools: aligned numpy buffers on CPU, PyCUDA ``mem_alloc`` on GPU.

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
    """Device memory of one GPU through PyCUDA; blocks are ``pycuda.driver.DeviceAllocation``.

    PyCUDA is imported here, on the first GPU allocation, never at ``import mxref``.
    """

    def __init__(self, device_id: int):
        self.device_id = device_id
        self.bytes_held = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self._drv = None
        self._cuctx = None

    def _driver(self):
        if self._drv is None:
            from .. import context  # noqa: PLC0415
            if context.num_gpus() <= self.device_id:
                raise MXNetError(f"storage: gpu({self.device_id}) is not available "
                                 f"(num_gpus()={context.num_gpus()})")
            import pycuda.driver as drv  # noqa: PLC0415 - optional dependency, loaded on first use
            drv.init()
            # The primary context is the one every mxref component shares on this device.
            self._cuctx = drv.Device(self.device_id).retain_primary_context()
            self._drv = drv
        return self._drv

    def alloc(self, nbytes: int):
        drv = self._driver()
        self._cuctx.push()
        try:
            block = drv.mem_alloc(nbytes)
        except drv.MemoryError as exc:
            raise OutOfMemory(f"cudaMalloc of {nbytes} bytes failed: {exc}") from None
        finally:
            drv.Context.pop()
        self.bytes_held += nbytes
        self.num_device_alloc += 1
        return block

    def free(self, block, nbytes: int) -> None:
        self._cuctx.push()
        try:
            block.free()
        finally:
            self._drv.Context.pop()
        self.bytes_held -= nbytes
        self.num_device_free += 1

    def mem_info(self) -> Tuple[int, int]:
        drv = self._driver()
        self._cuctx.push()
        try:
            return drv.mem_get_info()
        finally:
            drv.Context.pop()
