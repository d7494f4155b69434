"""The ``emulate`` backend: emulated devices whose memory is host memory and whose kernels run in
the CUDA emulator (``emulator.py``), behind the interface ``runtime.py`` expects of a backend.

``MXREF_CUDA_EMU_DEVICES`` (default 2) devices, each with ``MXREF_CUDA_EMU_MEM`` bytes (default
4 GiB; a cap, not a reservation: ``mem_info`` counts against it and an allocation past it fails
with out-of-memory, which the pool answers with release-all-and-retry). ``MXREF_CUDA_EMU_CHECK=0``
turns the out-of-bounds staging off (faster, and bugs go unnoticed).
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Sequence, Tuple

import numpy as np

from ...base import MXNetError, env_int
from . import emulator
from .runtime import pack_arg

__all__ = ["EmulatorBackend"]

_ALIGN = 256        # cudaMalloc's alignment


class _Memory:
    """One emulated device's allocator: aligned host blocks, counted against its capacity."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.held = 0
        self.lock = threading.Lock()


class EmulatorBackend:
    name = "emulate"
    # Blocks run one after another here, each costing a fiber switch per thread: a grid-stride
    # kernel is fastest with few blocks. The results do not depend on the grid.
    max_grid = 8

    def __init__(self):
        self.ndev = env_int("MXREF_CUDA_EMU_DEVICES", 2)
        capacity = env_int("MXREF_CUDA_EMU_MEM", 4 << 30)
        self.check = os.environ.get("MXREF_CUDA_EMU_CHECK", "1") != "0"
        self.memory = [_Memory(capacity) for _ in range(self.ndev)]

    # -- devices and memory --------------------------------------------------------------------
    def device_count(self) -> int:
        return self.ndev

    def device_name(self, device_id: int) -> str:
        return f"emulated CUDA device {device_id} (host memory, g++ fibers)"

    def alloc(self, device_id: int, nbytes: int):
        """``(ptr, owner)`` of ``nbytes`` of device memory, or ``MemoryError`` past the capacity."""
        mem = self._mem(device_id)
        with mem.lock:
            if mem.held + nbytes > mem.capacity:
                raise MemoryError(f"emulated gpu({device_id}): {nbytes} bytes requested, "
                                  f"{mem.capacity - mem.held} of {mem.capacity} free")
            mem.held += nbytes
        raw = np.empty(nbytes + _ALIGN, dtype=np.uint8)
        offset = -raw.ctypes.data % _ALIGN
        return raw.ctypes.data + offset, raw

    def free(self, device_id: int, owner, nbytes: int) -> None:
        mem = self._mem(device_id)
        with mem.lock:
            mem.held -= nbytes

    def mem_info(self, device_id: int) -> Tuple[int, int]:
        mem = self._mem(device_id)
        return max(mem.capacity - mem.held, 0), mem.capacity

    def _mem(self, device_id: int) -> _Memory:
        if not 0 <= device_id < self.ndev:
            raise MXNetError(f"gpu({device_id}) does not exist: the emulator has {self.ndev} device(s) "
                             "(MXREF_CUDA_EMU_DEVICES)")
        return self.memory[device_id]

    # NOTE: emulated device memory is host memory, so copies are memmove; they still go through
    # here so that code written against the emulator also runs against PyCUDA.
    def memcpy_htod(self, dst_ptr: int, host: np.ndarray, nbytes: int) -> None:
        ctypes.memmove(dst_ptr, host.ctypes.data, nbytes)

    def memcpy_dtoh(self, host: np.ndarray, src_ptr: int, nbytes: int) -> None:
        ctypes.memmove(host.ctypes.data, src_ptr, nbytes)

    def memcpy_dtod(self, dst_ptr: int, src_ptr: int, nbytes: int) -> None:
        ctypes.memmove(dst_ptr, src_ptr, nbytes)

    def make_stream(self, device_id: int):
        self._mem(device_id)
        return None

    def describe(self) -> dict:
        return {"launcher": "CUDA emulator (g++ + fibers, ctypes)", "devices": self.ndev,
                "driver": "none (emulated)", "bounds checks": "on" if self.check else "off",
                "cache": str(emulator.cache_dir())}

    # -- modules --------------------------------------------------------------------------------
    def load_module(self, source_path: str, options: Sequence[str]):
        return _Module(emulator.EmuModule(source_path, options), self.check)


class _Module:
    def __init__(self, emu: emulator.EmuModule, check: bool):
        self.emu, self.check = emu, check

    def launcher(self, name: str):
        entry = self.emu.entry(name)
        params = self.emu.kernels[name].params
        emu = self.emu
        check = 1 if self.check else 0
        nparams = len(params)
        argv_t, ext_t, dims_t = ctypes.c_void_p * max(nparams, 1), ctypes.c_longlong * max(nparams, 1), \
            ctypes.c_uint * 6
        addressof = ctypes.addressof

        def launch(args, grid, block, stream):
            if len(args) != nparams:
                raise MXNetError(f"kernel {name} takes {nparams} arguments "
                                 f"({', '.join(p.name for p in params)}), got {len(args)}")
            values, extents = [], []
            for value, param in zip(args, params):
                cval, extent = pack_arg(value, param, name)
                values.append(cval)
                extents.append(extent)
            # Each slot points at its argument's value, as cuLaunchKernel's kernelParams.
            argv = argv_t(*[addressof(v) for v in values])
            if entry(dims_t(*grid, *block), argv, ext_t(*extents), check) != 0:
                raise MXNetError(emu.last_error())

        return launch
