"""The bundled handwritten-digits dataset (1797 8x8 images, 10 classes) as arrays, iterator, dataset."""
from __future__ import annotations

import functools
import gzip
import os
from typing import Callable, Optional, Tuple

import numpy as np

from ..base import MXNetError
from .csv_iter import part_range
from .ndarray_iter import NDArrayIter

__all__ = ["load_digits", "DigitsIter", "DigitsDataset", "DIGITS_PATH"]

DIGITS_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "data", "digits.csv.gz")
_SPLITS = ("train", "val", "all")
_SPLIT_SEED = 0          # fixed: the train/val split is part of the dataset's definition
_TRAIN_FRACTION = 0.8
_PIXEL_MAX = 16.0        # pixels count "on" cells of a 4x4 block: 0..16


@functools.lru_cache(maxsize=1)
def _raw() -> Tuple[np.ndarray, np.ndarray]:
    """The file's 64 pixel columns (uint8) and label column, parsed once per process."""
    try:
        with gzip.open(DIGITS_PATH, "rt") as f:
            table = np.loadtxt(f, delimiter=",", dtype=np.uint8, ndmin=2)
    except OSError as exc:
        raise MXNetError(f"digits: cannot read the bundled data {DIGITS_PATH!r}: {exc}") from None
    pixels, labels = table[:, :64], table[:, 64]
    pixels.flags.writeable = labels.flags.writeable = False
    return pixels, labels


@functools.lru_cache(maxsize=None)
def _split_indices(split: str) -> np.ndarray:
    """Sorted example indices of a split: per class, the first 80% of a seeded permutation."""
    if split not in _SPLITS:
        raise MXNetError(f"digits: split must be one of {_SPLITS}, got {split!r}")
    labels = _raw()[1]
    if split == "all":
        return np.arange(len(labels))
    rng = np.random.RandomState(_SPLIT_SEED)
    chosen = []
    for c in range(10):
        members = rng.permutation(np.flatnonzero(labels == c))
        n_train = int(round(_TRAIN_FRACTION * len(members)))
        chosen.append(members[:n_train] if split == "train" else members[n_train:])
    out = np.sort(np.concatenate(chosen))
    out.flags.writeable = False
    return out


def load_digits(split: str = "all", flat: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """The digits as ``(data, label)`` numpy arrays.

    Parameters
    ----------
    split : {'all', 'train', 'val'}
        ``'train'`` and ``'val'`` are a fixed 80/20 split, stratified by class (1438 / 359
        examples); ``'all'`` is the whole file (1797), in file order.
    flat : bool
        Give each image as 64 values instead of ``(1, 8, 8)``.

    Returns
    -------
    data : numpy.ndarray
        float32, ``(N, 1, 8, 8)`` (or ``(N, 64)``), pixel counts 0..16 scaled to [0, 1].
    label : numpy.ndarray
        float32, ``(N,)``, the digit 0..9.
    """
    pixels, labels = _raw()
    idx = _split_indices(split)
    data = pixels[idx].astype(np.float32) / np.float32(_PIXEL_MAX)
    return data.reshape((len(idx), 64) if flat else (len(idx), 1, 8, 8)), labels[idx].astype(np.float32)


class DigitsIter(NDArrayIter):
    """An ``NDArrayIter`` over the bundled digits, with data ``'data'`` and label ``'softmax_label'``.

    Parameters
    ----------
    batch_size : int
        Examples per batch.
    split : {'train', 'val', 'all'}
        Which part of the fixed split to read (see :func:`load_digits`).
    shuffle : bool
        Reshuffle every epoch (``numpy.random``, as ``NDArrayIter``).
    flat : bool
        Images as 64 values instead of ``(1, 8, 8)``.
    num_parts, part_index : int
        Read only part ``part_index`` of ``num_parts`` contiguous ranges of the split (one per
        worker: ``num_parts=kv.num_workers, part_index=kv.rank``); parts never overlap and together
        cover the split exactly once.
    last_batch_handle : {'pad', 'discard', 'roll_over'}
        As in ``NDArrayIter``.
    data_name, label_name : str
        Input names.

    Examples
    --------
    >>> it = mx.io.DigitsIter(batch_size=100, split='train')
    >>> it.provide_data
    [DataDesc[data,(100, 1, 8, 8),<class 'numpy.float32'>,NCHW]]
    """

    def __init__(self, batch_size: int, split: str = "train", shuffle: bool = False,
                 flat: bool = False, num_parts: int = 1, part_index: int = 0,
                 last_batch_handle: str = "pad", data_name: str = "data",
                 label_name: str = "softmax_label"):
        data, label = load_digits(split, flat)
        start, end = part_range(len(data), num_parts, part_index, "DigitsIter")
        super().__init__(data[start:end], label[start:end], batch_size=batch_size, shuffle=shuffle,
                         last_batch_handle=last_batch_handle, data_name=data_name,
                         label_name=label_name)
        self.split, self.num_parts, self.part_index = split, num_parts, part_index


class DigitsDataset:
    """The digits as a Gluon-style dataset: ``dataset[i]`` is ``(image, label)``.

    ``image`` is a float32 numpy array ``(1, 8, 8)`` (or ``(64,)`` with ``flat``) in [0, 1] and
    ``label`` a float32 scalar. ``mx.gluon.data.vision.Digits`` is this class.

    Parameters
    ----------
    split : {'train', 'val', 'all'}
        See :func:`load_digits`.
    flat : bool
        Images as 64 values.
    transform : callable, optional
        ``transform(image, label) -> (image, label)`` applied to every example, as the
        ``transform`` argument of Gluon's vision datasets.
    """

    def __init__(self, split: str = "train", flat: bool = False,
                 transform: Optional[Callable] = None):
        self._data, self._label = load_digits(split, flat)
        self._transform = transform

    def __len__(self) -> int:
        return len(self._label)

    def __getitem__(self, idx: int):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]
