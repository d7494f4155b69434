"""The CUDA emulator's builder: a ``.cu`` source + ``emu/cuda_emu.h`` -> a g++-built ``.so`` via ctypes.

For each module (a source and its ``-D`` options) the builder writes one C++ file that includes
the emulation header and the source, then one ``extern "C"`` launch entry per ``__global__``
kernel, generated from its signature (``signature.py``)::

    extern "C" int emu_launch_relu(const unsigned* dims, void** args, const long long* extents, int check)

``args`` holds a pointer to each argument's value, as ``cuLaunchKernel``'s ``kernelParams``;
``extents`` gives each device-pointer argument's size in bytes (``-1``: unchecked), which the
launcher uses to stage it in front of a guard page (``emu/emu_runtime.h``). The shared object is
cached under ``MXREF_CUDA_CACHE`` (default ``~/.cache/mxref/cuda``), keyed by a hash of
everything that went into it, so each kernel family compiles once per machine.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
from typing import Dict, Sequence

from ...base import MXNetError
from .signature import Kernel, parse_kernels

__all__ = ["EMU_DIR", "build", "cache_dir", "EmuModule"]

EMU_DIR = pathlib.Path(__file__).resolve().parent / "emu"
_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing",
          "-U_FORTIFY_SOURCE", "-D_FORTIFY_SOURCE=0", "-DMXREF_CUDA_EMULATE=1", "-w"]
_lock = threading.Lock()


def cache_dir() -> pathlib.Path:
    """Where built modules are kept: ``MXREF_CUDA_CACHE``, else ``~/.cache/mxref/cuda``."""
    path = os.environ.get("MXREF_CUDA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                              "mxref", "cuda")
    return pathlib.Path(path)


def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise MXNetError("MXREF_CUDA=emulate needs a C++ compiler (g++) on the PATH")
    return cxx


def _wrapper(source_path: str, kernels: Dict[str, Kernel]) -> str:
    lines = ['#include "cuda_emu.h"', f'#include "{source_path}"', ""]
    for k in kernels.values():
        names = ", ".join(f'"{p.name}"' for p in k.params) or "nullptr"
        call = ", ".join(f"*({p.ctype}*)a[{i}]" for i, p in enumerate(k.params))
        writable = ", ".join("1" if p.writable else "0" for p in k.params) or "0"
        lines += [
            f"static const char* const emu_names_{k.name}[] = {{{names}}};",
            f"static void emu_invoke_{k.name}(void** a) {{ (void)a; {k.name}({call}); }}",
            f'extern "C" __attribute__((visibility("default"))) int emu_launch_{k.name}('
            "const unsigned* dims, void** args, const long long* extents, int check) {",
            f"    static const int writable[] = {{{writable}}};",
            f'    return emu::launch("{k.name}", emu_names_{k.name}, dims, {len(k.params)}, args, '
            f"extents, writable, check, emu_invoke_{k.name});",
            "}", ""]
    return "\n".join(lines)


def build(source_path: str, options: Sequence[str] = ()) -> pathlib.Path:
    """Compile ``source_path`` with ``options`` (``-Dreal_t=float``) for the emulator; the path of
    the cached shared object (built now if it is not cached yet)."""
    source = pathlib.Path(source_path).read_text()
    defines = _defines(options)
    kernels = parse_kernels(source, defines)
    if not kernels:
        raise MXNetError(f"{source_path}: no __global__ kernel found")
    wrapper = _wrapper(str(pathlib.Path(source_path).resolve()), kernels)
    cxx = _compiler()
    digest = hashlib.sha256()
    for part in (source, wrapper, " ".join(_FLAGS), " ".join(options), cxx,
                 (EMU_DIR / "cuda_emu.h").read_text(), (EMU_DIR / "emu_runtime.h").read_text()):
        digest.update(part.encode())
    # Includes next to the source (a shared device-function header) are part of the key too.
    for inc in sorted(pathlib.Path(source_path).resolve().parent.glob("*.cuh")):
        digest.update(inc.read_bytes())
    out_dir = cache_dir()
    target = out_dir / f"{pathlib.Path(source_path).stem}-{digest.hexdigest()[:16]}.so"
    if target.exists():
        return target
    with _lock:
        if target.exists():
            return target
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
            cpp = pathlib.Path(tmp) / "module.cpp"
            cpp.write_text(wrapper)
            so = pathlib.Path(tmp) / "module.so"
            cmd = [cxx, *_FLAGS, f"-I{EMU_DIR}", f"-I{pathlib.Path(source_path).resolve().parent}",
                   *options, str(cpp), "-o", str(so)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise MXNetError(f"emulator: compiling {source_path} failed:\n{proc.stderr[-4000:]}")
            os.replace(so, target)       # atomic: another process may be building the same module
    return target


def _defines(options: Sequence[str]) -> Dict[str, str]:
    out = {}
    for opt in options:
        if opt.startswith("-D"):
            name, _, value = opt[2:].partition("=")
            out[name] = value or "1"
    return out


class EmuModule:
    """A built emulator module: ``get_function(name)`` returns the launch entry of one kernel."""

    def __init__(self, source_path: str, options: Sequence[str] = ()):
        self.source_path = str(source_path)
        self.options = list(options)
        self.kernels = parse_kernels(pathlib.Path(source_path).read_text(), _defines(options))
        self.path = build(source_path, options)
        self.lib = ctypes.CDLL(str(self.path))
        self.lib.emu_last_error.restype = ctypes.c_char_p

    def entry(self, name: str):
        if name not in self.kernels:
            raise MXNetError(f"{self.source_path}: no kernel named {name!r} "
                             f"(kernels: {', '.join(sorted(self.kernels))})")
        fn = getattr(self.lib, f"emu_launch_{name}")
        fn.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_void_p),
                       ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]
        fn.restype = ctypes.c_int
        return fn

    def last_error(self) -> str:
        return self.lib.emu_last_error().decode(errors="replace")
