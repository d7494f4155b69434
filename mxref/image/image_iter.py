"""``mx.image.ImageIter``: batches of augmented images from a ``.rec`` file or an image list, in Python.

Sources: a RecordIO file (``path_imgrec``, sequential; with ``path_imgidx`` indexed, which
``shuffle`` and ``num_parts`` need), or a list of ``(label, filename)`` entries under ``path_root``
(``path_imglist``: MXNet's ``.lst`` lines ``index\\tlabel...\\tpath``; ``imglist``: a Python list).
Each image is decoded to HxWxC RGB, passed through ``aug_list`` (default ``CreateAugmenter(data_shape,
**kwargs)``) and stored CxHxW in a float32 batch. ``last_batch_handle`` is ``'pad'`` (fill from the
start, report ``pad``), ``'discard'`` or ``'roll_over'`` (keep the tail for the next epoch).
"""
from __future__ import annotations

import logging
import numbers
import os
import random

from .. import ndarray as nd
from .. import recordio
from ..io.base import DataBatch, DataDesc, DataIter
from .augmenters import CreateAugmenter
from .image import imdecode

__all__ = ["ImageIter"]


def _read_lst(path, dtype):
    """``index\\tlabel_1...\\tlabel_k\\tpath`` lines -> ({key: (label, path)}, keys in file order)."""
    imglist, keys = {}, []
    with open(path) as fin:
        for line in fin:
            parts = line.strip().split("\t")
            if len(parts) < 2:
                continue
            key = int(parts[0])
            imglist[key] = (nd.array([float(x) for x in parts[1:-1]], dtype=dtype), parts[-1])
            keys.append(key)
    return imglist, keys


def _from_list(entries, dtype):
    """A Python list of ``[label, path]`` or ``[l1, ..., lk, path]`` -> keys '1', '2', ... as MXNet."""
    imglist, keys = {}, []
    for i, img in enumerate(entries, start=1):
        if len(img) > 2:
            label = nd.array(img[:-1], dtype=dtype)
        elif isinstance(img[0], numbers.Number):
            label = nd.array([img[0]], dtype=dtype)
        else:
            label = nd.array(img[0], dtype=dtype)
        imglist[str(i)] = (label, img[-1])
        keys.append(str(i))
    return imglist, keys


class ImageIter(DataIter):
    """Image data iterator with MXNet's parameters (see the module docstring).

    Extra keyword arguments go to ``CreateAugmenter`` when ``aug_list`` is None (``resize``,
    ``rand_crop``, ``rand_mirror``, ``mean``, ``std``, ...).
    """

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None, path_imglist=None,
                 path_root=None, path_imgidx=None, shuffle=False, part_index=0, num_parts=1,
                 aug_list=None, imglist=None, data_name="data", label_name="softmax_label",
                 dtype="float32", last_batch_handle="pad", **kwargs):
        super().__init__(batch_size)
        assert path_imgrec or path_imglist or isinstance(imglist, list)
        assert dtype in ["int32", "float32", "int64", "float64"], dtype + " label not supported"
        assert last_batch_handle in ("pad", "discard", "roll_over"), last_batch_handle
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            logging.info("ImageIter: loading recordio %s...", path_imgrec)
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        self.imglist, keys = None, None
        if path_imglist:
            self.imglist, keys = _read_lst(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist, keys = _from_list(imglist, dtype)
        self.path_root = path_root
        self.check_data_shape(data_shape)
        self.provide_data = [DataDesc(data_name, (batch_size,) + tuple(data_shape))]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [DataDesc(label_name, label_shape)]
        self.batch_size, self.data_shape, self.label_width = batch_size, tuple(data_shape), label_width
        self.shuffle = shuffle
        if self.imgrec is None:
            self.seq = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            assert self.imgidx is not None, "shuffle and num_parts > 1 need path_imgidx"
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            assert part_index < num_parts
            per = len(self.seq) // num_parts       # MXNet drops the remainder, every part the same size
            self.seq = self.seq[part_index * per:(part_index + 1) * per]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self.cur, self._allow_read = 0, True
        self._cache_data = self._cache_label = self._cache_idx = None
        self.reset()

    def reset(self):
        """Start a new epoch (reshuffling); a rolled-over tail is kept for the first batch."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Start a new epoch and drop any rolled-over tail."""
        self._cache_data = self._cache_label = self._cache_idx = None
        self.reset()

    def next_sample(self):
        """The next ``(label, encoded image bytes)``; StopIteration at the end of the epoch."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            s = self.imgrec.read()
            if s is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(s)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = recordio.unpack(self.imgrec.read_idx(idx))
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def _batchify(self, batch_data, batch_label, start=0):
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image(data)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping:  %s", e)
                    continue
                data = self.augmentation_transform(data)
                batch_data[i] = self.postprocess_data(data)
                batch_label[i] = label
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        """The next DataBatch (NCHW float32 data, labels; ``pad`` counts filler examples)."""
        if self._cache_data is not None:
            batch_data, batch_label, i = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data = nd.zeros((self.batch_size,) + self.data_shape)
            batch_label = nd.empty(self.provide_label[0].shape)
            i = self._batchify(batch_data, batch_label)
        pad = self.batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = batch_data, batch_label, i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return DataBatch([batch_data], [batch_label], pad=pad)

    def check_data_shape(self, data_shape):
        """``data_shape`` must be (3, H, W)."""
        if not len(data_shape) == 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if not data_shape[0] == 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """Reject an empty decode."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s):
        """Decode bytes to HxWxC RGB; a failure names the file or record index."""
        try:
            return imdecode(s)
        except Exception as e:  # noqa: BLE001 - any codec error becomes one message naming the image
            where = self.seq[self.cur - 1] if self.seq is not None and self.cur else self.cur
            name = self.imglist[where][1] if self.imglist is not None else None
            msg = f"filename: {name}" if name is not None else f"index: {where}"
            raise RuntimeError(f"Broken image {msg}, {e}") from None

    def read_image(self, fname):
        """The raw bytes of ``path_root/fname``."""
        with open(os.path.join(self.path_root or "", fname), "rb") as fin:
            return fin.read()

    def augmentation_transform(self, data):
        """Apply ``self.auglist`` in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """HxWxC -> CxHxW."""
        return nd.transpose(datum, axes=(2, 0, 1))
