"""RecordIO (``mx.recordio``): MXNet's record file format, its index file, and the image-record header.

A ``.rec`` file is a sequence of records. Each record is written as::

    uint32 magic = 0xced7230a     (little-endian, as every field)
    uint32 lrec  = cflag << 29 | length
    length bytes of payload, then zero bytes up to a multiple of 4

``cflag`` is 0 for a whole record. A payload that contains the magic number at a 4-byte aligned
offset is cut there (so a reader that lost its place can find record starts by scanning for the
magic): the pieces are stored as parts with ``cflag`` 1 (first), 2 (middle) and 3 (last), and the
reader puts the magic back between them. This is dmlc-core's ``RecordIOWriter`` format, so files
are interchangeable with MXNet. An index file (``.idx``) holds one ``key\\toffset`` line per record.
"""
from __future__ import annotations

import functools
import numbers
import os
import struct
from collections import namedtuple
from typing import Optional, Tuple

import numpy as np

from .base import MXNetError

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img", "unpack_img"]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_HEAD = struct.Struct("<II")       # magic, lrec
_LEN_BITS = 29
_LEN_MASK = (1 << _LEN_BITS) - 1
_WHOLE, _FIRST, _MIDDLE, _LAST = 0, 1, 2, 3


def _pad4(n: int) -> int:
    return (n + 3) & ~3


class MXRecordIO:
    """Read or write a RecordIO file sequentially.

    Parameters
    ----------
    uri : str
        Path of the ``.rec`` file.
    flag : {'r', 'w'}
        Read, or write (truncating the file).

    Examples
    --------
    >>> rec = mx.recordio.MXRecordIO('tmp.rec', 'w')
    >>> for i in range(3):
    ...     rec.write(b'record_%d' % i)
    >>> rec.close()
    >>> rec = mx.recordio.MXRecordIO('tmp.rec', 'r')
    >>> rec.read()
    b'record_0'
    """

    def __init__(self, uri: str, flag: str):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid: Optional[int] = None
        self.is_open = False
        self._file = None
        self.open()

    def open(self) -> None:
        """Open the file (``reset`` is close + open)."""
        if self.flag not in ("r", "w"):
            raise ValueError(f"Invalid flag {self.flag}")
        self.writable = self.flag == "w"
        try:
            self._file = open(self.uri, "wb" if self.writable else "rb")
        except OSError as exc:
            raise MXNetError(f"MXRecordIO: cannot open {self.uri!r} for "
                             f"{'writing' if self.writable else 'reading'}: {exc}") from None
        self._size = 0 if self.writable else os.fstat(self._file.fileno()).st_size
        self.pid = os.getpid()
        self.is_open = True

    def close(self) -> None:
        """Close the file (flushing what was written)."""
        if not self.is_open:
            return
        self._file.close()
        self._file = None
        self.is_open = False
        self.pid = None

    def reset(self) -> None:
        """Go back to the first record; in write mode this empties the file."""
        self.close()
        self.open()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the OS closes the file anyway
            pass

    def __enter__(self) -> "MXRecordIO":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # A reader may be handed to a DataLoader worker process: the file is reopened there, from the
    # start (a file handle cannot travel; this object keeps its own).
    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_file"]
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._file = None
        was_open, self.is_open = state["is_open"], False
        if was_open:
            self.open()

    def _check_pid(self, allow_reset: bool = False) -> None:
        """A file handle shared with a forked process would interleave reads; reopen or refuse."""
        if self.pid != os.getpid():
            if not allow_reset:
                raise RuntimeError("Forbidden operation in multiple processes")
            self.reset()

    def _check_open(self, writing: bool) -> None:
        if not self.is_open:
            raise MXNetError(f"MXRecordIO: {self.uri!r} is closed")
        if writing != self.writable:
            raise MXNetError(f"MXRecordIO: {self.uri!r} is open for "
                             f"{'writing' if self.writable else 'reading'}")

    def write(self, buf: bytes) -> None:
        """Append one record."""
        self._check_open(writing=True)
        self._check_pid(allow_reset=False)
        data = bytes(buf)
        if len(data) >= 1 << _LEN_BITS:
            raise MXNetError(f"MXRecordIO: a record must be shorter than 2^29 bytes, got {len(data)}")
        pieces, start = [], 0
        # Cut at every 4-byte aligned occurrence of the magic number (which is not stored).
        i = data.find(_MAGIC_BYTES)
        while i >= 0:
            if i % 4 == 0:
                flag = _FIRST if start == 0 else _MIDDLE
                pieces += [_HEAD.pack(_MAGIC, flag << _LEN_BITS | (i - start)), data[start:i]]
                start = i + 4
            i = data.find(_MAGIC_BYTES, i + (4 if i % 4 == 0 else 1))
        rest = len(data) - start
        pieces += [_HEAD.pack(_MAGIC, (_LAST if start else _WHOLE) << _LEN_BITS | rest),
                   data[start:], b"\0" * (_pad4(rest) - rest)]
        self._file.write(b"".join(pieces))

    def read(self) -> Optional[bytes]:
        """The next record, or None at the end of the file."""
        self._check_open(writing=False)
        self._check_pid(allow_reset=False)
        f, parts = self._file, []
        start = f.tell()
        while True:
            offset = f.tell()
            head = f.read(_HEAD.size)
            if not head and not parts:
                return None
            if not head:
                raise MXNetError(f"Invalid RecordIO File {self.uri!r}: truncated final record at offset "
                                 f"{start}: the file ends after {len(parts)} part(s) without its last part")
            if len(head) != _HEAD.size:
                raise MXNetError(f"Invalid RecordIO File {self.uri!r}: truncated record header at "
                                 f"offset {offset} ({len(head)} of {_HEAD.size} bytes)")
            magic, lrec = _HEAD.unpack(head)
            if magic != _MAGIC:
                raise MXNetError(f"Invalid RecordIO File {self.uri!r}: bad magic {magic:#x} at "
                                 f"offset {offset}")
            cflag, length = lrec >> _LEN_BITS, lrec & _LEN_MASK
            if cflag > _LAST:
                raise MXNetError(f"Invalid RecordIO File {self.uri!r}: invalid cflag {cflag} in the "
                                 f"record header at offset {offset} (0..3)")
            if (cflag in (_WHOLE, _FIRST)) != (not parts):
                raise MXNetError(f"Invalid RecordIO File {self.uri!r}: cflag {cflag} at offset {offset} "
                                 + ("inside a multi-part record" if parts else
                                    "continues a record that was never started"))
            # NOTE: the length is checked against what is left of the file before reading, so a
            # corrupt header cannot make read() allocate 512 MiB for an 8-byte file.
            if _pad4(length) > self._size - f.tell():
                self._size = os.fstat(f.fileno()).st_size   # the file may have grown since open()
            left = self._size - f.tell()
            if _pad4(length) > left:
                raise MXNetError(f"Invalid RecordIO File {self.uri!r}: truncated record payload at "
                                 f"offset {offset} (header says {length} bytes, {max(left, 0)} left)")
            payload = f.read(_pad4(length))
            if len(payload) != _pad4(length):
                raise MXNetError(f"Invalid RecordIO File {self.uri!r}: truncated record payload at "
                                 f"offset {offset}")
            parts.append(payload[:length])
            if cflag in (_WHOLE, _LAST):
                return _MAGIC_BYTES.join(parts)


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index file, for reading records by key.

    Parameters
    ----------
    idx_path : str
        Path of the index file: one ``key\\toffset`` line per record.
    uri : str
        Path of the ``.rec`` file.
    flag : {'r', 'w'}
        Read or write.
    key_type : type
        Type of the keys (``int`` by default).

    Examples
    --------
    >>> rec = mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'w')
    >>> for i in range(5):
    ...     rec.write_idx(i, b'record_%d' % i)
    >>> rec.close()
    >>> mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'r').read_idx(3)
    b'record_3'
    """

    def __init__(self, idx_path: str, uri: str, flag: str, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self) -> None:
        super().open()
        self.idx, self.keys = {}, []
        self.fidx = open(self.idx_path, self.flag)
        if not self.writable:
            for lineno, line in enumerate(self.fidx, 1):
                fields = line.strip().split("\t")
                if len(fields) < 2:
                    continue
                try:
                    key, pos = self.key_type(fields[0]), int(fields[1])
                except ValueError:
                    raise MXNetError(f"MXIndexedRecordIO: {self.idx_path!r} line {lineno}: expected "
                                     f"'key<TAB>offset', got {line[:80]!r}") from None
                if pos < 0:
                    raise MXNetError(f"MXIndexedRecordIO: {self.idx_path!r} line {lineno}: negative "
                                     f"offset {pos}")
                self.idx[key] = pos
                self.keys.append(key)

    def close(self) -> None:
        if not self.is_open:
            return
        super().close()
        self.fidx.close()

    def __getstate__(self):
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx) -> None:
        """Move the read position to the record with key ``idx``."""
        self._check_open(writing=False)
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise MXNetError(f"MXIndexedRecordIO: no record with key {idx!r} in {self.idx_path!r}")
        pos = self.idx[idx]
        if pos + _HEAD.size > self._size:
            self._size = os.fstat(self._file.fileno()).st_size   # the file may have grown
            if pos + _HEAD.size > self._size:
                raise MXNetError(f"MXIndexedRecordIO: {self.idx_path!r} puts key {idx!r} at offset {pos}, "
                                 f"past the end of {self.uri!r} ({self._size} bytes)")
        self._file.seek(pos)

    def tell(self) -> int:
        """The byte offset where the next record will be written."""
        self._check_open(writing=True)
        return self._file.tell()

    def read_idx(self, idx) -> bytes:
        """The record with key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf: bytes) -> None:
        """Append a record and index it under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Header of an image record: ``flag``, ``label`` (a float or an array), ``id``, ``id2``.

With an array label, ``pack`` stores its length in ``flag`` and the float32 values after the header.
"""
_IR = struct.Struct("<IfQQ")


def pack(header: IRHeader, s: bytes) -> bytes:
    """Prefix ``s`` with an image-record header (and the label array, when the label is one).

    Examples
    --------
    >>> mx.recordio.unpack(mx.recordio.pack(mx.recordio.IRHeader(0, 4, 2574, 0), b'xy'))
    (HEADER(flag=0, label=4.0, id=2574, id2=0), b'xy')
    """
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return _IR.pack(*header) + s


def unpack(s: bytes) -> Tuple[IRHeader, bytes]:
    """Split a packed record into its header (array label restored) and the payload."""
    if len(s) < _IR.size:
        raise MXNetError(f"recordio.unpack: a record needs at least {_IR.size} header bytes, "
                         f"got {len(s)}")
    header = IRHeader(*_IR.unpack(s[:_IR.size]))
    s = s[_IR.size:]
    if header.flag > 0:
        if header.flag * 4 > len(s):
            raise MXNetError(f"recordio.unpack: the header's flag says {header.flag} float32 labels "
                             f"({header.flag * 4} bytes), but only {len(s)} bytes follow it")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


@functools.lru_cache(maxsize=None)
def _image_codec():
    """OpenCV if importable, else Pillow; images in RecordIO are encoded files (JPEG, PNG).

    Cached: a failed ``import cv2`` searches the whole path again on every call (~0.3 ms), which
    would cost more than decoding a small image."""
    try:
        import cv2
        return "cv2", cv2
    except ImportError:
        pass
    try:
        from PIL import Image
        return "pil", Image
    except ImportError:
        raise MXNetError("pack_img/unpack_img need an image library: install opencv-python "
                         "(cv2) or Pillow") from None


def pack_img(header: IRHeader, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encode ``img`` (HxW or HxWxC uint8, BGR as OpenCV) as JPEG or PNG and ``pack`` it."""
    kind, lib = _image_codec()
    fmt = img_fmt.lower()
    if fmt not in (".jpg", ".jpeg", ".png"):
        raise MXNetError(f"pack_img: img_fmt must be '.jpg' or '.png', got {img_fmt!r}")
    if kind == "cv2":
        params = ([lib.IMWRITE_JPEG_QUALITY, quality] if fmt != ".png"
                  else [lib.IMWRITE_PNG_COMPRESSION, quality])
        ok, buf = lib.imencode(fmt, img, params)
        if not ok:
            raise MXNetError("pack_img: failed to encode the image")
        return pack(header, buf.tobytes())
    import io
    rgb = img[..., ::-1] if img.ndim == 3 else img   # keep OpenCV's BGR convention
    out = io.BytesIO()
    lib.fromarray(np.ascontiguousarray(rgb)).save(out, "PNG" if fmt == ".png" else "JPEG",
                                                   quality=quality)
    return pack(header, out.getvalue())


def unpack_img(s: bytes, iscolor: int = -1) -> Tuple[IRHeader, np.ndarray]:
    """``unpack`` a record and decode its image (BGR channel order, as OpenCV)."""
    header, payload = unpack(s)
    kind, lib = _image_codec()
    if kind == "cv2":
        return header, lib.imdecode(np.frombuffer(payload, np.uint8), iscolor)
    import io
    img = lib.open(io.BytesIO(payload))
    if iscolor == 0:
        return header, np.asarray(img.convert("L"))
    if iscolor == 1 or img.mode not in ("L", "LA"):
        return header, np.asarray(img.convert("RGB"))[..., ::-1].copy()
    return header, np.asarray(img)
