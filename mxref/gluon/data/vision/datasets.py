"""Image datasets read from their standard files: MNIST, FashionMNIST (idx ``.gz``), CIFAR10/100
(binary ``.bin``), ``ImageRecordDataset`` (``.rec`` + ``.idx``), ``ImageFolderDataset`` (one folder
per class) and ``ImageListDataset`` (a ``.lst`` file or a list; MXNet 2.x's, offered here too).

Nothing is downloaded: a missing file raises ``MXNetError`` naming the files and the folder to
put them in. The default ``root`` is ``$MXNET_HOME/datasets/<name>`` (``~/.mxnet`` without it).
Samples are ``(image, label)`` with the image an HWC uint8 NDArray; ``transform(data, label)``,
when given, is applied to each sample.
"""
from __future__ import annotations

import gzip
import os
import struct
import warnings

import numpy as np

from .... import image, recordio
from .... import ndarray as nd
from ....base import MXNetError
from ..dataset import Dataset, RecordFileDataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset", "ImageFolderDataset",
           "ImageListDataset"]


def _default_root(name: str) -> str:
    return os.path.join(os.environ.get("MXNET_HOME", os.path.join("~", ".mxnet")), "datasets", name)


class _FileDataset(Dataset):
    """Arrays ``_data`` / ``_label`` read once from files under ``root`` by ``_get_data``."""

    _name = ""

    def __init__(self, root, transform):
        self._root = os.path.expanduser(root if root is not None else _default_root(self._name))
        self._transform = transform
        self._data = self._label = None
        self._get_data()

    def _need(self, names):
        """The paths of ``names`` under root; ``MXNetError`` naming the missing ones and the folder."""
        paths = [os.path.join(self._root, n) for n in names]
        missing = [n for n, p in zip(names, paths) if not os.path.isfile(p)]
        if missing:
            raise MXNetError(f"{type(self).__name__}: missing {', '.join(missing)} in {self._root}; "
                             f"put the dataset's files there (or pass root=<folder>, or set "
                             f"MXNET_HOME); mxref does not download")
        return paths

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self) -> int:
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError


class MNIST(_FileDataset):
    """MNIST handwritten digits: 28x28x1 uint8 images, int32 labels (idx files, gzipped)."""

    _name = "mnist"
    _files = {True: ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
              False: ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _get_data(self):
        data_file, label_file = self._need(self._files[bool(self._train)])
        with gzip.open(label_file, "rb") as f:
            struct.unpack(">II", f.read(8))                 # magic, count
            label = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int32)
        with gzip.open(data_file, "rb") as f:
            _, _, rows, cols = struct.unpack(">IIII", f.read(16))
            data = np.frombuffer(f.read(), dtype=np.uint8).reshape(len(label), rows, cols, 1)
        self._data = nd.array(data, dtype=np.uint8)
        self._label = label


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: MNIST's file names and layout, clothing instead of digits."""

    _name = "fashion-mnist"


class CIFAR10(_FileDataset):
    """CIFAR-10: 32x32x3 uint8 images, int32 labels, from the binary batches
    (``data_batch_1..5.bin`` / ``test_batch.bin``: records of 1 label byte + 3072 CHW bytes)."""

    _name = "cifar10"
    _files = {True: tuple(f"data_batch_{i}.bin" for i in range(1, 6)), False: ("test_batch.bin",)}
    _label_bytes = 1

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _label_of(self, head: np.ndarray) -> np.ndarray:
        return head[:, 0]

    def _get_data(self):
        data, label = [], []
        for path in self._need(self._files[bool(self._train)]):
            with open(path, "rb") as f:
                rec = np.frombuffer(f.read(), dtype=np.uint8).reshape(-1, 3072 + self._label_bytes)
            data.append(rec[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            label.append(self._label_of(rec[:, :self._label_bytes]).astype(np.int32))
        self._data = nd.array(np.concatenate(data), dtype=np.uint8)
        self._label = np.concatenate(label)


class CIFAR100(CIFAR10):
    """CIFAR-100 (``train.bin`` / ``test.bin``: coarse label, fine label, 3072 bytes);
    ``fine_label=True`` gives the 100 fine classes, else the 20 coarse ones."""

    _name = "cifar100"
    _files = {True: ("train.bin",), False: ("test.bin",)}
    _label_bytes = 2

    def __init__(self, root=None, fine_label=False, train=True, transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_of(self, head: np.ndarray) -> np.ndarray:
        return head[:, int(bool(self._fine_label))]


class ImageRecordDataset(RecordFileDataset):
    """Images packed in a RecordIO file (``recordio.pack_img``): ``(imdecode(img, flag), label)``."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag, self._transform = flag, transform

    def __getitem__(self, idx):
        header, img = recordio.unpack(super().__getitem__(idx))
        data = image.imdecode(img, self._flag)
        return self._transform(data, header.label) if self._transform is not None else (data, header.label)


class ImageFolderDataset(Dataset):
    """Images in ``root/<class>/<file>`` (.jpg, .jpeg, .png); labels number the sorted class folders.

    ``synsets[i]`` is the name of class ``i``; ``items`` lists ``(path, label)``.
    """

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag, self._transform = flag, transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root):
        if not os.path.isdir(root):
            raise MXNetError(f"ImageFolderDataset: {root} is not a folder")
        self.synsets, self.items = [], []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for name in sorted(os.listdir(path)):
                filename = os.path.join(path, name)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn(f"Ignoring {filename} of type {ext}. Only support "
                                  f"{', '.join(self._exts)}", stacklevel=3)
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        path, label = self.items[idx]
        img = image.imread(path, self._flag)
        return self._transform(img, label) if self._transform is not None else (img, label)

    def __len__(self) -> int:
        return len(self.items)


class ImageListDataset(Dataset):
    """Images listed in ``imglist`` under ``root``: a ``.lst`` file (``index<TAB>label(s)<TAB>path``
    per line) or a list of ``[label(s)..., path]``. Labels are float32 (a scalar when single)."""

    def __init__(self, root=".", imglist=None, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag, self._transform = flag, transform
        self.items = []
        if isinstance(imglist, str):
            with open(os.path.expanduser(imglist)) as f:
                for line in f:
                    parts = line.strip().split("\t")
                    if len(parts) >= 3:
                        self.items.append((self._label(parts[1:-1]), parts[-1]))
        elif imglist is not None:
            for entry in imglist:
                self.items.append((self._label(list(entry[:-1])), entry[-1]))
        else:
            raise MXNetError("ImageListDataset: imglist (a .lst file or a list) is required")

    @staticmethod
    def _label(values):
        label = np.asarray(values, dtype=np.float32).ravel()
        return label[0] if label.size == 1 else label

    def __getitem__(self, idx):
        label, path = self.items[idx]
        img = image.imread(os.path.join(self._root, path), self._flag)
        return self._transform(img, label) if self._transform is not None else (img, label)

    def __len__(self) -> int:
        return len(self.items)
