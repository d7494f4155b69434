"""Devices: ``Context``, ``mx.cpu(i)``, ``mx.gpu(i)`` and the thread-local default context."""
from __future__ import annotations

import os
import re
import threading
from typing import Dict, Optional

from .base import MXNetError

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus", "gpu_memory_info",
           "set_memory_limit", "memory_limit"]


class _ContextMeta(type):
    """Gives ``Context.default_ctx``: this thread's default context, readable and settable on the
    class as in MXNet (``Context.default_ctx = mx.cpu(1)``)."""

    @property
    def default_ctx(cls) -> "Context":
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx: "Context") -> None:
        cls._local.value = ctx


class Context(metaclass=_ContextMeta):
    """A device on which arrays live and operators run.

    ``Context`` is also a context manager that makes itself the default for new arrays::

        with mx.Context(mx.cpu(1)):
            a = mx.nd.zeros((2, 2))   # lives on cpu(1)
    """

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {v: k for k, v in devtype2str.items()}
    _local = threading.local()

    __slots__ = ("device_typeid", "device_id")

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
        # NOTE: the previous default goes on a per-thread stack, not on this object: arrays share
        # one Context object, so ``with x.context:`` nests on the same object (a HybridBlock
        # calling a child) and a slot on the object would forget the outer default.
        stack = getattr(Context._local, "stack", None)
        if stack is None:
            stack = Context._local.stack = []
        stack.append(current_context())
        Context._local.value = self
        return self

    def __exit__(self, *exc):
        Context._local.value = Context._local.stack.pop()

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


# -- per-device memory limits ---------------------------------------------------------------------
# Read by the storage pools (``mxref/storage/pool.py``) on every allocation that reaches the
# device: a device may hold at most its limit (blocks in use plus blocks pooled for reuse).

_LIMIT_ENV = "MXREF_DEVICE_MEMORY_LIMIT"
_UNITS = {unit + b: 1 << (10 * k) for k, unit in enumerate(("", "K", "M", "G")) for b in ("", "B")}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]?B?)\s*$", re.IGNORECASE)
_DEVICE = re.compile(r"^\s*(cpu|gpu|cpu_pinned|cpu_shared)(?:\((\d+)\))?\s*$")
_api_limits: Dict[object, Optional[int]] = {}    # set_memory_limit: Context -> bytes (None: none)
_env_cache: list = [None, {}]                    # [the variable's text, its parsed limits]


def parse_memory_size(text: str, what: str = _LIMIT_ENV) -> int:
    """``'64MB'`` -> 67108864. Units K/M/G (optionally with B) are powers of 1024."""
    m = _SIZE.match(str(text))
    if m is None:
        raise MXNetError(f"{what}: cannot read {text!r} as a size (e.g. 1048576, 512KB, 64MB, 1.5GB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def _env_limits() -> Dict[object, int]:
    """``MXREF_DEVICE_MEMORY_LIMIT='cpu(1)=64MB,cpu(0)=1GB'``; a bare device type (``cpu=256MB``)
    gives every device of that type the limit; parsed again whenever the variable changes."""
    text = os.environ.get("MXREF_DEVICE_MEMORY_LIMIT", "")
    if text != _env_cache[0]:
        limits: Dict[object, int] = {}
        for item in filter(None, (p.strip() for p in text.split(","))):
            dev, sep, size = item.partition("=")
            m = _DEVICE.match(dev)
            if not sep or m is None:
                raise MXNetError(f"{_LIMIT_ENV}: {item!r} is not '<device>=<size>' such as 'cpu(1)=64MB'")
            key = m.group(1) if m.group(2) is None else Context(m.group(1), int(m.group(2)))
            limits[key] = parse_memory_size(size)
        _env_cache[:] = [text, limits]
    return _env_cache[1]


def set_memory_limit(ctx: Context, nbytes) -> Optional[int]:
    """Cap the memory ``ctx``'s pool may hold (in use plus pooled) at ``nbytes`` (an int or a size
    such as ``'64MB'``; ``None`` removes the cap, falling back to ``MXREF_DEVICE_MEMORY_LIMIT``).
    Returns the previous limit set here. An allocation beyond it first releases the pool, then
    raises an out-of-memory ``MXNetError`` naming the device, the request and what is in use::

        mx.context.set_memory_limit(mx.cpu(1), "64MB")
    """
    if not isinstance(ctx, Context):
        raise MXNetError(f"set_memory_limit: expected a Context such as mx.cpu(1), got {ctx!r}")
    if nbytes is not None:
        nbytes = parse_memory_size(nbytes, "set_memory_limit") if isinstance(nbytes, str) else int(nbytes)
        if nbytes < 0:
            raise MXNetError(f"set_memory_limit: the limit of {ctx} must be >= 0 bytes, got {nbytes}")
    old = _api_limits.get(ctx)
    if nbytes is None:
        _api_limits.pop(ctx, None)
    else:
        _api_limits[ctx] = nbytes
    return old


def memory_limit(ctx: Context) -> Optional[int]:
    """The cap on ``ctx``'s memory in bytes: ``set_memory_limit``'s, else the environment's, else ``None``."""
    if ctx in _api_limits:
        return _api_limits[ctx]
    env = _env_limits()
    if not env:
        return None
    return env.get(ctx, env.get(ctx.device_type))
