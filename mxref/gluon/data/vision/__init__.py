"""``mx.gluon.data.vision``: image datasets (MNIST, CIFAR, folders, RecordIO), ``transforms``, and
the bundled digits dataset (``Digits``, from ``mxref.io``)."""
from ....io.digits import DigitsDataset as Digits  # noqa: F401
from . import transforms  # noqa: F401
from .datasets import (  # noqa: F401
    CIFAR10,
    CIFAR100,
    MNIST,
    FashionMNIST,
    ImageFolderDataset,
    ImageListDataset,
    ImageRecordDataset,
)
