"""``MNISTIter``: batches from MNIST's IDX files (plain or gzip), scaled to [0, 1) as MXNet does."""
from __future__ import annotations

import gzip
import logging
from typing import Optional

import numpy as np

from ..base import MXNetError, normalize_dtype
from ..ndarray import array as _nd_array
from .csv_iter import part_range
from .ndarray_iter import NDArrayIter

__all__ = ["MNISTIter", "read_idx"]

# IDX header: two zero bytes, a type code, the number of dimensions; then each dimension as a
# big-endian int32; then the values, big-endian.
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_GZIP_MAGIC = b"\x1f\x8b"


def read_idx(path: str) -> np.ndarray:
    """Read an IDX file (gzip-compressed or not, told apart by the gzip magic bytes)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise MXNetError(f"MNISTIter: cannot read {path!r}: {exc}") from None
    if raw[:2] == _GZIP_MAGIC:
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise MXNetError(f"MNISTIter: {path!r} is not an IDX file (bad magic {raw[:4]!r})")
    ndim = raw[3]
    header = 4 + 4 * ndim
    shape = tuple(int(d) for d in np.frombuffer(raw, ">i4", ndim, 4))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    count = int(np.prod(shape))
    if len(raw) < header + count * dtype.itemsize:
        raise MXNetError(f"MNISTIter: {path!r} is truncated: header says {shape}, "
                         f"file has {len(raw) - header} bytes of values")
    return np.frombuffer(raw, dtype, count, header).reshape(shape)


class MNISTIter(NDArrayIter):
    """Iterate over the MNIST images and labels.

    Pixels become ``value / 256`` (MXNet's scaling, so 255 maps to 0.996), images are
    ``(batch, 1, rows, cols)`` or, with ``flat``, ``(batch, rows*cols)``; labels are ``(batch,)``.
    Only full batches are produced: the remainder of the data is skipped every epoch. With
    ``shuffle`` the examples are permuted once, at construction, by a generator seeded with
    ``seed``; every epoch then visits them in that order (as MXNet does; the permutation itself
    differs from MXNet's, which uses C++'s ``std::shuffle``).

    Parameters
    ----------
    image, label : str
        IDX files (``train-images-idx3-ubyte`` / ``train-labels-idx1-ubyte``, optionally ``.gz``).
    batch_size : int
        Examples per batch (128 by default).
    shuffle : bool
        Permute the examples once (True by default).
    flat : bool
        Give each image as one row of ``rows*cols`` values.
    seed : int
        Seed of the permutation.
    silent : bool
        Do not log the dataset summary.
    num_parts, part_index : int
        Read only part ``part_index`` of ``num_parts`` contiguous ranges of the files, cut as MXNet
        cuts them (``num_parts=kv.num_workers, part_index=kv.rank`` in distributed training).
    dtype : str, optional
        Cast data and label to this type (float32 unless given).
    """

    def __init__(self, image: str = "./train-images-idx3-ubyte",
                 label: str = "./train-labels-idx1-ubyte", batch_size: int = 128,
                 shuffle: bool = True, flat: bool = False, seed: int = 0, silent: bool = False,
                 num_parts: int = 1, part_index: int = 0, dtype: Optional[str] = None,
                 data_name: str = "data", label_name: str = "softmax_label",
                 prefetch_buffer: int = 4, ctx: str = "gpu"):
        images, labels = read_idx(image), read_idx(label)
        if images.ndim != 3 or labels.ndim != 1:
            raise MXNetError(f"MNISTIter: need 3-D images and 1-D labels, got shapes {images.shape} "
                             f"({image!r}) and {labels.shape} ({label!r})")
        if len(images) != len(labels):
            raise MXNetError(f"MNISTIter: {len(images)} images but {len(labels)} labels")
        start, end = part_range(len(images), num_parts, part_index, "MNISTIter")
        images, labels = images[start:end], labels[start:end]
        if shuffle:
            perm = np.random.RandomState(seed).permutation(len(images))
            images, labels = images[perm], labels[perm]
        n, rows, cols = images.shape
        data = images.astype(np.float32) * np.float32(1.0 / 256.0)
        data = data.reshape((n, rows * cols) if flat else (n, 1, rows, cols))
        out_type = np.dtype(np.float32) if dtype in (None, "None") else normalize_dtype(dtype)
        super().__init__(_nd_array(data, dtype=out_type), _nd_array(labels, dtype=out_type),
                         batch_size=batch_size, shuffle=False, last_batch_handle="discard",
                         data_name=data_name, label_name=label_name)
        self.flat, self.seed = flat, seed
        if not silent:
            logging.info("MNISTIter: load %d images, shuffle=%d, shape=%s", n, int(shuffle),
                         self.provide_data[0].shape)
