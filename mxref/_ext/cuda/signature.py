"""Read the ``__global__`` kernel signatures of a ``.cu`` source: names, parameter types, pointers.

Both launchers need them: the emulator generates one ``extern "C"`` launch entry per kernel from
them, and both pack Python arguments into the C types the kernel declares. Kernel signatures may
use the ``-D`` macros of the module's options (``real_t``) but no other macros.
"""
from __future__ import annotations

import ctypes
import re
from typing import Dict, List, NamedTuple

from ...base import MXNetError

__all__ = ["Param", "Kernel", "parse_kernels", "CTYPES"]

# C scalar type (as written in a signature, after the options' macros) -> ctypes type.
CTYPES = {
    "int": ctypes.c_int, "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint,
    "long long": ctypes.c_longlong, "long long int": ctypes.c_longlong,
    "unsigned long long": ctypes.c_ulonglong, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
    "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "size_t": ctypes.c_size_t,
    "float": ctypes.c_float, "double": ctypes.c_double,
}

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_GLOBAL = re.compile(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)")


class Param(NamedTuple):
    name: str
    ctype: str          # the C type with qualifiers, as the wrapper casts to it
    pointer: bool
    writable: bool      # a pointer to non-const memory (the kernel may write through it)


class Kernel(NamedTuple):
    name: str
    params: List[Param]


def _param(text: str, kernel: str) -> Param:
    text = " ".join(text.replace("__restrict__", " ").split())
    m = re.match(r"(.*?[\s*&])(\w+)$", text)
    if not m:
        raise MXNetError(f"kernel {kernel}: cannot read parameter {text!r}")
    ctype, name = m.group(1).strip(), m.group(2)
    pointer = "*" in ctype
    if not pointer:
        base = " ".join(w for w in ctype.split() if w != "const")
        if base not in CTYPES:
            raise MXNetError(f"kernel {kernel}: parameter {name} has type {ctype!r}; kernels take "
                             f"pointers and the scalars {sorted(CTYPES)}")
        ctype = base
    writable = pointer and not ctype.split("*")[0].split().count("const")
    return Param(name, ctype, pointer, writable)


def parse_kernels(source: str, defines: Dict[str, str] = None) -> Dict[str, Kernel]:
    """The kernels of ``source`` by name, with the ``-D`` macros of ``defines`` substituted."""
    text = _COMMENT.sub(" ", source)
    kernels = {}
    for m in _GLOBAL.finditer(text):
        name, params_text = m.group(1), m.group(2)
        for macro, value in (defines or {}).items():
            params_text = re.sub(rf"\b{re.escape(macro)}\b", value, params_text)
        params = [_param(p, name) for p in params_text.split(",") if p.strip()]
        kernels[name] = Kernel(name, params)
    return kernels
