"""A streaming LibSVM reader: one shard of a file, read in chunks, parsed into CSR (data, indices, indptr).

A LibSVM line is ``label idx:val idx:val ...`` (indices zero-based, as MXNet's ``LibSVMIter``
reads them). The file is never read whole: ``read_chunks`` yields blocks of complete lines of
about ``chunk_bytes`` and ``parse_chunk`` turns one block into numpy arrays, so a file larger than
memory streams through a constant-size window.

Shards split the file by byte range on line boundaries, as dmlc's ``InputSplit`` does: part ``k``
of ``n`` nominally covers bytes ``[k*size/n, (k+1)*size/n)``; each end is moved forward past the
next newline, so a line belongs to the part in which the byte before it falls, and the parts
cover every line exactly once whatever the line lengths.

Parsing is vectorised over a whole chunk (``numpy.fromstring`` over all ``idx val`` pairs); only
when that finds something wrong is the chunk re-read line by line, to name the file and line.
"""
from __future__ import annotations

import os
import warnings
from typing import Iterator, NamedTuple, Optional, Tuple

import numpy as np

from ..base import MXNetError

__all__ = ["CSRChunk", "part_bytes", "read_chunks", "parse_chunk", "iter_part"]

DEFAULT_CHUNK = 1 << 20      # bytes per read; batches never need more than a chunk in memory


class CSRChunk(NamedTuple):
    """Rows parsed from one block: ``labels[i]`` and row ``i``'s entries
    ``indices[indptr[i]:indptr[i+1]]`` with values ``data[...]``."""

    labels: np.ndarray      # float32, (rows,)
    data: np.ndarray        # float32, (nnz,)
    indices: np.ndarray     # int64, (nnz,)
    indptr: np.ndarray      # int64, (rows + 1,)


def _line_end_after(f, offset: int, size: int) -> int:
    """The first line start after ``offset - 1``'s line ends: where a part boundary at ``offset`` falls."""
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    f.seek(offset - 1)
    pos = offset - 1
    while True:
        block = f.read(1 << 16)
        if not block:
            return size
        hit = block.find(b"\n")
        if hit >= 0:
            return pos + hit + 1
        pos += len(block)


def part_bytes(path: str, num_parts: int, part_index: int) -> Tuple[int, int]:
    """Bytes ``[begin, end)`` of part ``part_index`` of ``num_parts`` of ``path`` (whole lines)."""
    if num_parts < 1 or not 0 <= part_index < num_parts:
        raise MXNetError(f"LibSVMIter: need 0 <= part_index < num_parts, got part_index="
                         f"{part_index}, num_parts={num_parts}")
    size = os.path.getsize(path)
    step = -(-size // num_parts)
    with open(path, "rb") as f:
        return (_line_end_after(f, step * part_index, size),
                _line_end_after(f, step * (part_index + 1), size))


def read_chunks(path: str, begin: int, end: int,
                chunk_bytes: int = DEFAULT_CHUNK) -> Iterator[Tuple[int, bytes]]:
    """Yield ``(offset, block)``: bytes ``[begin, end)`` of ``path`` in blocks of whole lines."""
    with open(path, "rb") as f:
        f.seek(begin)
        pos, carry = begin, b""
        while pos < end:
            block = f.read(min(chunk_bytes, end - pos))
            if not block:
                break
            pos += len(block)
            block = carry + block
            cut = block.rfind(b"\n") + 1 if pos < end else len(block)
            if cut == 0:             # one line longer than a chunk: keep reading it
                carry = block
                continue
            yield pos - len(block), block[:cut]
            carry = block[cut:]
        if carry:
            yield pos - len(carry), carry


def _where(path: str, offset: int, block: bytes, line_in_block: int) -> str:
    """``'file.libsvm line 17'``: counts newlines before the block only when an error is reported."""
    before = 0
    with open(path, "rb") as f:
        left = offset
        while left > 0:
            piece = f.read(min(left, 1 << 20))
            if not piece:
                break
            before += piece.count(b"\n")
            left -= len(piece)
    return f"{path} line {before + line_in_block + 1}"


def _fail_line(path: str, offset: int, block: bytes, num_features: int, what: str) -> None:
    """Re-parse ``block`` line by line and raise the error of the first bad line."""
    for i, raw in enumerate(block.split(b"\n")):
        tokens = raw.split()
        if not tokens:
            continue
        where = _where(path, offset, block, i)
        try:
            float(tokens[0])
        except ValueError:
            raise MXNetError(f"LibSVMIter: {what} {where}: label {tokens[0].decode(errors='replace')!r} "
                             "is not a number") from None
        for tok in tokens[1:]:
            idx, sep, val = tok.partition(b":")
            try:
                if not sep:
                    raise ValueError
                i_val, v_val = int(idx), float(val)
            except ValueError:
                raise MXNetError(f"LibSVMIter: {what} {where}: bad entry "
                                 f"{tok.decode(errors='replace')!r} (expected idx:value)") from None
            del v_val
            if not 0 <= i_val < num_features:
                raise MXNetError(f"LibSVMIter: {what} {where}: feature index {i_val} is outside "
                                 f"[0, {num_features}) of the shape given for it")
    raise MXNetError(f"LibSVMIter: {what} {path}: cannot parse the block at byte {offset}")


def parse_chunk(block: bytes, num_features: int, path: str = "<bytes>", offset: int = 0,
                what: str = "data_libsvm") -> CSRChunk:
    """Parse whole LibSVM lines into a ``CSRChunk`` (blank lines are skipped).

    Raises ``MXNetError`` naming ``path`` and the line for a non-numeric label, an entry that is
    not ``idx:value`` or an index outside ``[0, num_features)``.
    """
    lines = [ln for ln in block.split(b"\n") if ln.strip()]
    heads, rests = [], []
    for ln in lines:
        parts = ln.split(None, 1)
        heads.append(parts[0])
        rests.append(parts[1] if len(parts) > 1 else b"")
    counts = np.fromiter((r.count(b":") for r in rests), np.int64, len(rests))
    indptr = np.zeros(len(lines) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    try:
        labels = np.array(heads, dtype=np.bytes_).astype(np.float32) if heads else np.zeros(0, np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("error")     # numpy warns (not raises) where parsing stops early
            pairs = (np.fromstring(b" ".join(rests).replace(b":", b" "), dtype=np.float64, sep=" ")
                     if nnz else np.zeros(0))
    except (ValueError, DeprecationWarning):
        _fail_line(path, offset, block, num_features, what)
    if pairs.size != 2 * nnz:
        _fail_line(path, offset, block, num_features, what)
    idx = pairs[0::2]
    indices = idx.astype(np.int64)
    if nnz and (indices.min() < 0 or indices.max() >= num_features or not np.array_equal(indices, idx)):
        _fail_line(path, offset, block, num_features, what)
    return CSRChunk(labels, pairs[1::2].astype(np.float32), indices, indptr)


def iter_part(path: str, num_features: int, num_parts: int = 1, part_index: int = 0,
              chunk_bytes: int = DEFAULT_CHUNK, what: str = "data_libsvm",
              span: Optional[Tuple[int, int]] = None) -> Iterator[CSRChunk]:
    """Yield the ``CSRChunk`` of each block of part ``part_index`` of ``path``, in file order."""
    if not os.path.isfile(path):
        raise MXNetError(f"LibSVMIter: {what} {path!r} does not exist")
    begin, end = span if span is not None else part_bytes(path, num_parts, part_index)
    for offset, block in read_chunks(path, begin, end, chunk_bytes):
        chunk = parse_chunk(block, num_features, path, offset, what)
        if len(chunk.labels):
            yield chunk
