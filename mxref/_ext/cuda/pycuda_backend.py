"""The ``pycuda`` backend: real GPUs through PyCUDA, behind the interface ``runtime.py`` expects.

One primary context per device (shared with anything else on the process), pushed around each
call; kernels compiled by PyCUDA's ``SourceModule`` (nvcc) with the same sources and options as
the emulator's; one ``pycuda.driver.Stream`` per engine worker thread. A launch is synchronised
on its stream before the op completes, so the engine's completion means the data is written.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Sequence, Tuple

import numpy as np

from ...base import MXNetError
from .runtime import KERNEL_DIR, DeviceArray, DeviceBuffer

__all__ = ["PyCudaBackend"]


class PyCudaBackend:
    name = "pycuda"
    max_grid = 65535

    def __init__(self):
        import pycuda.driver as drv  # noqa: PLC0415 - optional dependency, loaded on first GPU use
        drv.init()
        self.drv = drv
        self.ndev = drv.Device.count()
        if self.ndev == 0:
            raise MXNetError("PyCUDA sees no CUDA device")
        self._ctx = [drv.Device(i).retain_primary_context() for i in range(self.ndev)]
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _on(self, device_id: int):
        if not 0 <= device_id < self.ndev:
            raise MXNetError(f"gpu({device_id}) does not exist ({self.ndev} device(s))")
        self._ctx[device_id].push()
        try:
            yield
        finally:
            self.drv.Context.pop()

    def device_count(self) -> int:
        return self.ndev

    def device_name(self, device_id: int) -> str:
        return self.drv.Device(device_id).name()

    def alloc(self, device_id: int, nbytes: int):
        with self._on(device_id):
            try:
                block = self.drv.mem_alloc(max(nbytes, 1))
            except self.drv.MemoryError as exc:
                raise MemoryError(str(exc)) from None
        return int(block), block

    def free(self, device_id: int, owner, nbytes: int) -> None:
        with self._on(device_id):
            owner.free()

    def mem_info(self, device_id: int) -> Tuple[int, int]:
        with self._on(device_id):
            return self.drv.mem_get_info()

    # Copies run on the calling thread's current context: a device pointer is valid in any
    # context of the process under unified addressing.
    def memcpy_htod(self, dst_ptr: int, host: np.ndarray, nbytes: int) -> None:
        with self._on(0):
            self.drv.memcpy_htod(dst_ptr, host)

    def memcpy_dtoh(self, host: np.ndarray, src_ptr: int, nbytes: int) -> None:
        with self._on(0):
            self.drv.memcpy_dtoh(host, src_ptr)

    def memcpy_dtod(self, dst_ptr: int, src_ptr: int, nbytes: int) -> None:
        with self._on(0):
            self.drv.memcpy_dtod(dst_ptr, src_ptr, nbytes)

    def make_stream(self, device_id: int):
        with self._on(device_id):
            return self.drv.Stream()

    def describe(self) -> dict:
        version = self.drv.get_driver_version()        # e.g. 12040 for 12.4
        return {"launcher": "PyCUDA (nvcc, SourceModule)",
                "driver": f"CUDA {version // 1000}.{version % 1000 // 10}", "devices": self.ndev}

    def load_module(self, source_path: str, options: Sequence[str]):
        return _Module(self, source_path, options)


class _Module:
    def __init__(self, be: PyCudaBackend, source_path: str, options: Sequence[str]):
        from pycuda.compiler import SourceModule  # noqa: PLC0415

        from .emulator import _defines  # noqa: PLC0415
        from .signature import parse_kernels  # noqa: PLC0415
        text = open(source_path).read()
        self.be = be
        self.kernels = parse_kernels(text, _defines(options))
        self._mods = {}
        self._text, self._options = text, list(options)
        self._SourceModule = SourceModule

    def _module(self, device_id: int):
        mod = self._mods.get(device_id)
        if mod is None:
            with self.be._on(device_id):
                mod = self._mods[device_id] = self._SourceModule(
                    self._text, options=self._options, include_dirs=[str(KERNEL_DIR)])
        return mod

    def launcher(self, name: str):
        from .runtime import pack_arg  # noqa: PLC0415
        if name not in self.kernels:
            raise MXNetError(f"no kernel named {name!r} (kernels: {', '.join(sorted(self.kernels))})")
        params = self.kernels[name].params

        def launch(args, grid, block, stream):
            device = next((a.device_id for a in args if isinstance(a, (DeviceArray, DeviceBuffer))), 0)
            values = []
            for value, param in zip(args, params):
                cval, _ = pack_arg(value, param, name)
                values.append(np.uintp(cval.value or 0) if param.pointer else
                              np.dtype(type(cval)._type_).type(cval.value))
            with self.be._on(device):
                fn = self._module(device).get_function(name)
                handle = stream.handle if stream is not None else None
                fn(*values, grid=tuple(int(g) for g in grid), block=tuple(int(b) for b in block),
                   stream=handle)
                if handle is not None:
                    handle.synchronize()
                else:
                    self.be.drv.Context.synchronize()

        return launch
