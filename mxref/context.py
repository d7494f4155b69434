"""Devices: ``Context``, ``mx.cpu(i)``, ``mx.gpu(i)`` and the thread-local default context."""
from __future__ import annotations

import threading

from .base import MXNetError

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus", "gpu_memory_info"]


class Context:
    """A device on which arrays live and operators run.

    ``Context`` is also a context manager that makes itself the default for new arrays::

        with mx.Context(mx.cpu(1)):
            a = mx.nd.zeros((2, 2))   # lives on cpu(1)
    """

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {v: k for k, v in devtype2str.items()}
    _local = threading.local()

    __slots__ = ("device_typeid", "device_id", "_old_ctx")

    def __init__(self, device_type, device_id: int = 0):
        if isinstance(device_type, Context):
            self.device_typeid = device_type.device_typeid
            self.device_id = device_type.device_id
        else:
            if device_type not in self.devstr2type:
                raise MXNetError(f"unknown device type {device_type!r}; expected one of "
                                 f"{sorted(self.devstr2type)}")
            if int(device_id) < 0:
                raise MXNetError(f"device_id must be >= 0, got {device_id}")
            self.device_typeid = self.devstr2type[device_type]
            self.device_id = int(device_id)
        self._old_ctx = None

    @property
    def device_type(self) -> str:
        return self.devtype2str[self.device_typeid]

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __str__(self):
        return f"{self.device_type}({self.device_id})"

    __repr__ = __str__

    def __enter__(self):
        self._old_ctx = current_context()
        Context._local.value = self
        return self

    def __exit__(self, *exc):
        Context._local.value = self._old_ctx

    def empty_cache(self):
        """Return this device's pooled memory to the system (MXNet 1.x ``Context.empty_cache``)."""
        from . import storage
        storage.release_all(self)


def cpu(device_id: int = 0) -> Context:
    """The CPU context; ``device_id`` names a separate worker group, not a separate core."""
    return Context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    return Context("cpu_pinned", device_id)


def gpu(device_id: int = 0) -> Context:
    """A GPU context. Creating one never touches CUDA; using it without a GPU raises ``MXNetError``."""
    return Context("gpu", device_id)


def current_context() -> Context:
    """The default context of this thread (``cpu(0)`` unless inside ``with Context(...)``)."""
    ctx = getattr(Context._local, "value", None)
    if ctx is None:
        ctx = Context._local.value = Context("cpu", 0)
    return ctx


def num_gpus() -> int:
    """Number of GPUs visible to the GPU backend (``MXREF_CUDA``): real devices through PyCUDA, or
    the emulator's (``MXREF_CUDA=emulate``, 2 by default); 0 without one (never raises)."""
    from ._ext.cuda import runtime  # noqa: PLC0415 - the GPU runtime loads on first use
    return runtime.num_devices()


def gpu_memory_info(device_id: int = 0):
    """``(free, total)`` bytes of a GPU, as MXNet's ``mx.context.gpu_memory_info``."""
    if num_gpus() <= device_id:
        raise MXNetError(f"gpu({device_id}) is not available (num_gpus()={num_gpus()})")
    from ._ext.cuda import runtime  # noqa: PLC0415
    return runtime.backend().mem_info(device_id)
