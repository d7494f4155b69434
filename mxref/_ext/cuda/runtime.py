"""The GPU runtime: which launcher runs the kernels (``MXREF_CUDA``), device memory, modules, streams.

Two backends share one interface, modelled on PyCUDA's (``SourceModule(...).get_function(name)``
then ``fn(*args, grid=, block=, stream=)``):

* ``emulate``: the CUDA emulator (``emulator.py``): kernels built by g++ against ``emu/cuda_emu.h``,
  device memory is host memory behind the same pools, ``MXREF_CUDA_EMU_DEVICES`` devices (2);
* ``pycuda``: a real GPU through PyCUDA (``pycuda_backend.py``).

``MXREF_CUDA`` picks one: ``emulate``, ``pycuda``, ``off`` (no GPU at all), or unset: ``pycuda``
when it finds a device, else ``off``. Nothing here runs at ``import mxref``: the backend is chosen
on first use and modules are compiled the first time one of their kernels launches.
"""
from __future__ import annotations

import ctypes
import os
import pathlib
import threading
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ...base import MXNetError

__all__ = ["KERNEL_DIR", "backend", "backend_name", "reset_backend", "num_devices", "DeviceBuffer",
           "DeviceArray", "SourceModule", "module", "Stream", "thread_stream", "default_stream",
           "copy_array", "LAUNCH_STATS"]

KERNEL_DIR = pathlib.Path(__file__).resolve().parent / "kernels"
_lock = threading.RLock()
_backend = None
_backend_reason = ""
LAUNCH_STATS: Dict[str, int] = {}      # kernel name -> launches (tests and mxref.info())


# --------------------------------------------------------------------------------- backend choice
def _choose():
    global _backend_reason
    want = os.environ.get("MXREF_CUDA", "").strip().lower()
    if want not in ("", "emulate", "pycuda", "off"):
        raise MXNetError(f"MXREF_CUDA={want!r}: expected emulate, pycuda or off")
    if want == "off":
        _backend_reason = "MXREF_CUDA=off"
        return None
    if want == "emulate":
        from .emulator_backend import EmulatorBackend  # noqa: PLC0415
        _backend_reason = "MXREF_CUDA=emulate"
        return EmulatorBackend()
    try:
        from .pycuda_backend import PyCudaBackend  # noqa: PLC0415
        be = PyCudaBackend()
    except Exception as exc:  # noqa: BLE001 - any failure means "no usable GPU"
        if want == "pycuda":
            raise MXNetError(f"MXREF_CUDA=pycuda but PyCUDA cannot start: {exc}") from exc
        _backend_reason = f"no GPU through PyCUDA ({type(exc).__name__}); MXREF_CUDA=emulate runs " \
                          "the kernels on the CPU"
        return None
    _backend_reason = "MXREF_CUDA=pycuda" if want else "PyCUDA found a device"
    return be


def backend(required: bool = True):
    """The active backend (chosen on the first call); ``None`` when there is none and not
    ``required``, else an ``MXNetError`` saying how to get one."""
    global _backend
    be = _backend
    if be is None:
        with _lock:
            if _backend is None:
                _backend = _choose() or False
            be = _backend
    if not be:
        if required:
            raise MXNetError(f"no GPU backend: {_backend_reason}")
        return None
    return be


def backend_name() -> str:
    """``'emulate'``, ``'pycuda'`` or ``'off'``, and why (for ``mxref.info()``)."""
    be = backend(required=False)
    return f"{be.name if be else 'off'} ({_backend_reason})"


def reset_backend() -> None:
    """Forget the backend so the next use reads ``MXREF_CUDA`` again (tests)."""
    global _backend
    with _lock:
        _backend = None
        _modules.clear()


def num_devices() -> int:
    """GPUs the active backend offers (0 without one); never raises."""
    try:
        be = backend(required=False)
    except MXNetError:
        return 0
    return be.device_count() if be else 0


# --------------------------------------------------------------------------------- device memory
class DeviceBuffer:
    """One block of device memory: ``ptr`` (device address), ``nbytes``, ``device_id``; ``owner``
    keeps the backend's allocation alive. Blocks of the pools are these."""

    __slots__ = ("ptr", "nbytes", "device_id", "owner", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, device_id: int, owner):
        self.ptr, self.nbytes, self.device_id, self.owner = int(ptr), int(nbytes), device_id, owner

    def view(self, shape: Tuple[int, ...], dtype: np.dtype, offset: int = 0) -> "DeviceArray":
        return DeviceArray(self, tuple(shape), np.dtype(dtype), offset)

    def __int__(self):
        return self.ptr            # as PyCUDA's DeviceAllocation

    def __repr__(self):
        return f"<DeviceBuffer gpu({self.device_id}) {self.nbytes} bytes at {self.ptr:#x}>"


class DeviceArray:
    """A contiguous array in device memory: what GPU kernels receive in place of numpy arrays.

    Host code cannot read it (numpy refuses: ``__array__`` raises, so no numpy kernel can run on
    it by mistake); ``get()`` copies it to the host, ``set(host)`` / ``a[...] = host`` and
    ``fill(v)`` write it, ``a[...] = other_device_array`` copies on the device.
    """

    __slots__ = ("buffer", "shape", "dtype", "offset", "size", "nbytes", "ptr")

    def __init__(self, buffer: DeviceBuffer, shape, dtype, offset: int = 0):
        self.buffer, self.shape, self.dtype, self.offset = buffer, shape, np.dtype(dtype), int(offset)
        self.size = int(np.prod(shape, dtype=np.int64))
        self.nbytes = self.size * self.dtype.itemsize
        if self.offset + self.nbytes > buffer.nbytes:
            raise MXNetError(f"DeviceArray: {shape} {self.dtype} at offset {offset} does not fit in a "
                             f"{buffer.nbytes}-byte block")
        self.ptr = buffer.ptr + self.offset

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def device_id(self) -> int:
        return self.buffer.device_id

    def reshape(self, *shape) -> "DeviceArray":
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1]))
            shape = tuple(self.size // max(known, 1) if d == -1 else d for d in shape)
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise MXNetError(f"DeviceArray.reshape: cannot reshape {self.shape} into {shape}")
        return DeviceArray(self.buffer, shape, self.dtype, self.offset)

    def get(self) -> np.ndarray:
        """A host copy (``cudaMemcpy`` device to host)."""
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            backend().memcpy_dtoh(out, self.ptr, self.nbytes)
        return out

    def set(self, host) -> None:
        """Write ``host`` (broadcast and cast to this array's shape and dtype) into device memory."""
        src = np.ascontiguousarray(np.broadcast_to(np.asarray(host, dtype=self.dtype), self.shape))
        if self.nbytes:
            backend().memcpy_htod(self.ptr, src, self.nbytes)

    def fill(self, value) -> None:
        self.set(np.full(self.shape, value, self.dtype))

    def __setitem__(self, key, value) -> None:
        if key is not Ellipsis and key != slice(None):
            raise MXNetError(f"a gpu array can only be written whole from the host (a[...] = v), "
                             f"not a[{key!r}]; use an operator (slice_assign) instead")
        if isinstance(value, DeviceArray):
            copy_array(self, value)
        else:
            self.set(value)

    def __array__(self, dtype=None, copy=None):
        raise MXNetError(f"a gpu array ({self.shape} {self.dtype}) was handed to numpy; host code "
                         "cannot read device memory (copy it with asnumpy() / copyto(mx.cpu()))")

    def __repr__(self):
        return f"<DeviceArray gpu({self.device_id}) {self.shape} {self.dtype}>"


def copy_array(dst, src) -> None:
    """``dst[...] = src`` for any pair of numpy arrays and DeviceArrays of one shape (the body of
    ``NDArray.copyto``): host↔device and device↔device copies go through the backend."""
    if isinstance(dst, np.ndarray) and isinstance(src, np.ndarray):
        dst[...] = src
        return
    if tuple(dst.shape) != tuple(src.shape):
        raise MXNetError(f"copy: shape mismatch, source {tuple(src.shape)} vs target {tuple(dst.shape)}")
    if isinstance(dst, DeviceArray) and isinstance(src, DeviceArray):
        if dst.dtype != src.dtype:
            raise MXNetError(f"copy between gpu arrays of dtypes {src.dtype} and {dst.dtype}: cast first")
        if dst.nbytes:
            backend().memcpy_dtod(dst.ptr, src.ptr, dst.nbytes)
    elif isinstance(dst, DeviceArray):
        dst.set(src)
    else:
        host = src.get()
        dst[...] = host


# --------------------------------------------------------------------------------- modules, launch
class Stream:
    """An ordered queue of work on one device. Emulated: the worker thread that owns it runs each
    launch at once, so its order is the worker's order; PyCUDA: a ``pycuda.driver.Stream``."""

    __slots__ = ("device_id", "name", "handle", "launches")

    def __init__(self, device_id: int, name: str, handle=None):
        self.device_id, self.name, self.handle, self.launches = device_id, name, handle, 0

    def synchronize(self) -> None:
        if self.handle is not None:
            self.handle.synchronize()

    def __repr__(self):
        return f"<Stream gpu({self.device_id}) {self.name!r} launches={self.launches}>"


_streams: Dict[Tuple[int, str], Stream] = {}
_default_streams: Dict[int, Stream] = {}


def thread_stream(device_id: int, thread_name: str) -> Stream:
    """The stream of one engine worker thread (``engine.threaded``'s GPU thread init calls this)."""
    try:
        be = backend(required=False)
        handle = be.make_stream(device_id) if be else None
    except MXNetError:      # no such device: the op's allocation reports it, naming the device
        handle = None
    with _lock:
        s = _streams[(device_id, thread_name)] = Stream(device_id, thread_name, handle)
    return s


def default_stream(device_id: int) -> Stream:
    """The stream used where no engine worker provides one (the naive engine, tests)."""
    s = _default_streams.get(device_id)
    if s is None:
        with _lock:
            s = _default_streams.setdefault(device_id, Stream(device_id, "default", None))
    return s


def streams() -> Dict[Tuple[int, str], Stream]:
    with _lock:
        return dict(_streams)


class Function:
    """One kernel of a module: ``fn(*args, grid=(gx, gy, gz), block=(bx, by, bz), stream=s)``.

    ``args`` are DeviceArrays (passed as device pointers; the emulator checks their bounds) or
    Python numbers (cast to the C type the kernel declares).
    """

    def __init__(self, module: "SourceModule", name: str, launcher):
        self.module, self.name, self._launcher = module, name, launcher

    def __call__(self, *args, grid=(1, 1, 1), block=(1, 1, 1), stream: Optional[Stream] = None):
        if len(grid) != 3:
            grid = tuple(grid) + (1,) * (3 - len(grid))
        if len(block) != 3:
            block = tuple(block) + (1,) * (3 - len(block))
        if stream is not None:
            stream.launches += 1
        LAUNCH_STATS[self.name] = LAUNCH_STATS.get(self.name, 0) + 1
        self._launcher(args, grid, block, stream)


class SourceModule:
    """A ``.cu`` source compiled for the active backend with ``options`` (``-Dreal_t=float``), as
    PyCUDA's ``SourceModule``; ``get_function(name)`` returns a launchable :class:`Function`."""

    def __init__(self, source_path, options: Sequence[str] = ()):
        self.source_path = str(source_path)
        self.options = tuple(options)
        self._impl = backend().load_module(self.source_path, self.options)
        self._functions: Dict[str, Function] = {}

    def get_function(self, name: str) -> Function:
        fn = self._functions.get(name)
        if fn is None:
            fn = self._functions[name] = Function(self, name, self._impl.launcher(name))
        return fn


_modules: Dict[Tuple[str, Tuple[str, ...]], SourceModule] = {}


def module(family: str, dtype=None, extra: Sequence[str] = ()) -> SourceModule:
    """The compiled module of ``kernels/<family>.cu`` for ``dtype`` (``real_t``), compiled on first
    use and cached for the process (and, by the emulator, on disk)."""
    options = list(extra)
    if dtype is not None:
        options.insert(0, f"-Dreal_t={_CTYPE[np.dtype(dtype).name]}")
    key = (family, tuple(options))
    mod = _modules.get(key)
    if mod is None:
        with _lock:
            mod = _modules.get(key)
            if mod is None:
                path = KERNEL_DIR / f"{family}.cu"
                if not path.exists():
                    raise MXNetError(f"no kernel family {family!r} ({path} does not exist)")
                mod = _modules[key] = SourceModule(path, options)
    return mod


_CTYPE = {"float32": "float", "float64": "double"}
_CTYPES = None      # signature.CTYPES, bound on first use below


def supports_dtype(dtype) -> bool:
    """Whether the kernel families are built for ``dtype`` (float32 and float64)."""
    return np.dtype(dtype).name in _CTYPE


def pack_arg(value, param, kernel: str):
    """One argument as the ctypes value its parameter declares (a device pointer for arrays), and
    the bytes the emulator checks it against (-1: not checked)."""
    global _CTYPES
    if _CTYPES is None:
        from .signature import CTYPES  # noqa: PLC0415
        _CTYPES = CTYPES
    if param.pointer:
        if value.__class__ is DeviceArray or isinstance(value, DeviceBuffer):
            return ctypes.c_void_p(value.ptr), value.nbytes
        if value is None or (isinstance(value, int) and value == 0):
            return ctypes.c_void_p(0), -1
        raise MXNetError(f"kernel {kernel}: argument {param.name} is a device pointer, got "
                         f"{type(value).__name__} (host arrays must be copied to the device first)")
    if isinstance(value, (DeviceArray, np.ndarray)):
        raise MXNetError(f"kernel {kernel}: argument {param.name} is a {param.ctype}, got an array")
    return _CTYPES[param.ctype](value), -1


class use_emulator_unless_gpu:
    """Context manager for tests: inside it, the GPU backend is the one ``MXREF_CUDA`` names, or
    the emulator when it names none (so the GPU suite runs everywhere, and on a real GPU with
    ``MXREF_CUDA=pycuda``); the previous state afterwards."""

    def __enter__(self):
        self._old = os.environ.get("MXREF_CUDA")
        if self._old not in ("emulate", "pycuda"):
            os.environ["MXREF_CUDA"] = "emulate"
            if backend(required=False) is None or backend().name != "emulate":
                reset_backend()
        return backend()

    def __exit__(self, *exc):
        if self._old not in ("emulate", "pycuda"):
            reset_backend()
            if self._old is None:
                os.environ.pop("MXREF_CUDA", None)
            else:
                os.environ["MXREF_CUDA"] = self._old
        return False
