"""A data-only encoding for the robust engine's checkpoints and broadcast results: JSON plus numpy buffers.

``dumps`` accepts None, bools, ints, floats, strings, bytes, lists, tuples, dicts (any keys it
accepts), numpy arrays and numpy scalars of number or bool dtypes; anything else is
``Unsupported``. ``loads`` builds only those: it never imports or calls anything the bytes name,
checks every dtype, shape and buffer length against the bytes it holds, and raises ``MXNetError``
on anything malformed. Layout::

    b"MXRC1\\n", header length (8 bytes, little-endian), JSON header, buffers back to back

where the header is ``{"v": tree, "b": [nbytes, ...]}`` and every node of the tree is a tagged
list: ``["n"]``, ``["b", bool]``, ``["i", int]``, ``["f", float]``, ``["s", str]``, ``["y", buf]``,
``["l", [nodes]]``, ``["t", [nodes]]``, ``["d", [[key, value], ...]]``, ``["a", dtype, shape, buf]``,
``["g", dtype, buf]`` (a numpy scalar).
"""
from __future__ import annotations

import json
import math
import struct
from typing import Any, List

import numpy as np

from ..base import MXNetError

MAGIC = b"MXRC1\n"
PICKLED = b"MXRPK1\n"     # marks a pickle, made and read only with the explicit opt-in
_LEN = struct.Struct("<q")
MAX_DEPTH = 100
_KINDS = "biufc"        # numpy dtype kinds that are plain numbers or bools


class Unsupported(MXNetError):
    """The value holds something the data-only encoding cannot carry (a class instance, say)."""


def encode(value: Any, allow_pickle: bool, who: str) -> bytes:
    """``value`` in the data-only encoding; pickled (behind ``PICKLED``) only with the opt-in."""
    try:
        return dumps(value)
    except Unsupported as exc:
        if not allow_pickle:
            raise MXNetError(f"{who}: {exc}; checkpoints and broadcast objects travel as numpy arrays, "
                             "numbers, strings, bytes, lists, tuples and dicts. Pass allow_pickle=True "
                             "(or set MXREF_ALLOW_PICKLE=1) on every rank to pickle other Python "
                             "objects (peers then run code the bytes name)") from None
    import pickle  # noqa: PLC0415 - only on the opt-in path
    return PICKLED + pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def decode(blob: bytes, allow_pickle: bool, who: str) -> Any:
    """The inverse of ``encode``; a pickle from a peer is refused unless this rank opted in too."""
    if blob[:len(PICKLED)] == PICKLED:
        if not allow_pickle:
            raise MXNetError(f"{who}: a peer sent a pickled object; this rank did not opt in "
                             "(allow_pickle=True or MXREF_ALLOW_PICKLE=1)")
        import pickle  # noqa: PLC0415
        return pickle.loads(blob[len(PICKLED):])
    return loads(blob, who)


def is_encoded(blob: bytes) -> bool:
    return blob[:len(MAGIC)] == MAGIC


def dumps(value: Any) -> bytes:
    bufs: List[bytes] = []
    tree = _enc(value, bufs, 0)
    head = json.dumps({"v": tree, "b": [len(b) for b in bufs]}).encode()
    return b"".join([MAGIC, _LEN.pack(len(head)), head, *bufs])


def _enc(v: Any, bufs: List[bytes], depth: int) -> list:
    if depth > MAX_DEPTH:
        raise Unsupported(f"data-only encoding: nesting deeper than {MAX_DEPTH}")

    def buf(data: bytes) -> int:
        bufs.append(data)
        return len(bufs) - 1
    if v is None:
        return ["n"]
    if isinstance(v, (np.ndarray, np.generic)):     # first: np.float64 is also a float
        arr = np.asarray(v)
        if arr.dtype.kind not in _KINDS:
            raise Unsupported(f"data-only encoding: numpy dtype {arr.dtype} is not a number")
        data = np.ascontiguousarray(arr).tobytes()
        if isinstance(v, np.generic):
            return ["g", arr.dtype.str, buf(data)]
        return ["a", arr.dtype.str, list(arr.shape), buf(data)]
    if isinstance(v, bool):
        return ["b", v]
    if isinstance(v, int):
        return ["i", int(v)]
    if isinstance(v, float):
        return ["f", v if math.isfinite(v) else repr(v)]
    if isinstance(v, str):
        return ["s", v]
    if isinstance(v, (bytes, bytearray)):
        return ["y", buf(bytes(v))]
    if isinstance(v, (list, tuple)):
        return ["l" if isinstance(v, list) else "t", [_enc(x, bufs, depth + 1) for x in v]]
    if isinstance(v, dict):
        return ["d", [[_enc(k, bufs, depth + 1), _enc(x, bufs, depth + 1)] for k, x in v.items()]]
    raise Unsupported(f"data-only encoding cannot carry a {type(v).__module__}.{type(v).__qualname__}")


def loads(blob: bytes, source: str = "robust engine message") -> Any:
    def bad(why: str):
        return MXNetError(f"{source}: {why}")
    if not is_encoded(blob) or len(blob) < len(MAGIC) + _LEN.size:
        raise bad("not a data-only encoding")
    (n,) = _LEN.unpack_from(blob, len(MAGIC))
    start = len(MAGIC) + _LEN.size
    if not 0 <= n <= len(blob) - start:
        raise bad(f"header of {n} bytes in a blob of {len(blob)}")
    try:
        head = json.loads(blob[start:start + n])
        sizes = head["b"]
        tree = head["v"]
    except (ValueError, KeyError, TypeError):
        raise bad("malformed header") from None
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
        raise bad("malformed buffer table")
    offsets, pos = [], start + n
    for s in sizes:
        offsets.append((pos, s))
        pos += s
    if pos != len(blob):
        raise bad(f"buffers end at byte {pos}, the blob has {len(blob)}")
    return _dec(tree, blob, offsets, bad, 0)


def _dec(node: Any, blob: bytes, offsets, bad, depth: int) -> Any:
    if depth > MAX_DEPTH or not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise bad("malformed value")
    tag, args = node[0], node[1:]

    def buf(i) -> bytes:
        if not isinstance(i, int) or not 0 <= i < len(offsets):
            raise bad(f"buffer {i!r} does not exist")
        at, size = offsets[i]
        return blob[at:at + size]

    def dtype(text) -> np.dtype:
        try:
            dt = np.dtype(text) if isinstance(text, str) else None
        except (TypeError, ValueError):
            dt = None
        if dt is None or dt.kind not in _KINDS or dt.fields is not None or dt.subdtype is not None:
            raise bad(f"dtype {text!r} is not a number")
        return dt
    try:
        if tag == "n" and not args:
            return None
        if tag == "b" and len(args) == 1 and isinstance(args[0], bool):
            return args[0]
        if tag == "i" and len(args) == 1 and isinstance(args[0], int) and not isinstance(args[0], bool):
            return args[0]
        if tag == "f" and len(args) == 1 and isinstance(args[0], (int, float, str)):
            if isinstance(args[0], str) and args[0] not in ("inf", "-inf", "nan"):
                raise bad(f"float {args[0]!r}")
            return float(args[0])
        if tag == "s" and len(args) == 1 and isinstance(args[0], str):
            return args[0]
        if tag == "y" and len(args) == 1:
            return buf(args[0])
        if tag in "lt" and len(tag) == 1 and len(args) == 1 and isinstance(args[0], list):
            items = [_dec(x, blob, offsets, bad, depth + 1) for x in args[0]]
            return items if tag == "l" else tuple(items)
        if tag == "d" and len(args) == 1 and isinstance(args[0], list):
            out = {}
            for pair in args[0]:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise bad("malformed dict entry")
                key = _dec(pair[0], blob, offsets, bad, depth + 1)
                out[key] = _dec(pair[1], blob, offsets, bad, depth + 1)
            return out
        if tag == "a" and len(args) == 3:
            dt, shape, data = dtype(args[0]), args[1], buf(args[2])
            if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
                raise bad(f"shape {shape!r}")
            if int(np.prod(shape, dtype=object)) * dt.itemsize != len(data):
                raise bad(f"{len(data)} bytes for shape {shape} of {dt}")
            return np.frombuffer(data, dt).reshape(shape).copy()
        if tag == "g" and len(args) == 2:
            dt, data = dtype(args[0]), buf(args[1])
            if len(data) != dt.itemsize:
                raise bad(f"{len(data)} bytes for a {dt} scalar")
            return np.frombuffer(data, dt)[0]
    except TypeError as exc:      # an unhashable dict key, say
        raise bad(str(exc)) from None
    raise bad(f"malformed value of tag {tag!r}")
