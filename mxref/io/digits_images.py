"""The bundled digits written out as an image folder (``root/<digit>/<n>.png``) for image pipelines.

``ImageFolderDataset``, ``im2rec`` and ``ImageRecordIter`` read image files; the bundled digits are
8x8 arrays. ``save_digit_images`` makes the files, so examples and tests of those pipelines run
offline on real data: each image is scaled up (bilinear, Pillow) to ``size`` x ``size`` grayscale.
"""
from __future__ import annotations

import os
from typing import Iterable, List, Optional, Tuple

import numpy as np

from ..base import MXNetError
from .digits import load_digits

__all__ = ["save_digit_images"]


def save_digit_images(root: str, split: str = "train", size: int = 32, classes: Iterable[int] = range(10),
                      per_class: Optional[int] = None) -> List[Tuple[str, int]]:
    """Write the digits of ``split`` as PNG files ``root/<digit>/<index>.png``.

    Parameters
    ----------
    root : str
        Folder to fill (created); one sub-folder per digit, so ``ImageFolderDataset(root)`` numbers
        the classes in ``classes``' sorted order.
    split : {'train', 'val', 'all'}
        Which part of the bundled set (see ``mxref.io.digits.load_digits``).
    size : int
        Edge of the written square images (>= 8).
    classes : iterable of int
        The digits to write (e.g. ``range(5)`` for 0-4).
    per_class : int, optional
        At most this many images per digit (the first ones of the split).

    Returns
    -------
    list of (path, digit)
    """
    from PIL import Image  # noqa: PLC0415 - Pillow is a dependency; imported only when used

    if size < 8:
        raise MXNetError(f"save_digit_images: size must be >= 8 (the digits are 8x8), got {size}")
    data, labels = load_digits(split)
    written = []
    for digit in sorted(set(int(c) for c in classes)):
        if not 0 <= digit <= 9:
            raise MXNetError(f"save_digit_images: classes must be digits 0-9, got {digit}")
        folder = os.path.join(root, str(digit))
        os.makedirs(folder, exist_ok=True)
        index = np.flatnonzero(labels == digit)[:per_class]
        for i in index:
            pixels = np.rint(data[i, 0] * 255).astype(np.uint8)
            path = os.path.join(folder, "%04d.png" % i)
            Image.fromarray(pixels).resize((size, size), Image.BILINEAR).save(path)
            written.append((path, digit))
    return written
