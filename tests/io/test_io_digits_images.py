"""mxref.io.digits_images.save_digit_images: the bundled digits as an image folder of PNG files."""
import os

import numpy as np
import pytest

import mxref as mx
from mxref.io.digits import load_digits
from mxref.io.digits_images import save_digit_images


def test_writes_one_folder_per_digit(tmp_path):
    """At size 8 the files hold the digits' pixels exactly (x 255, rounded); classes and per_class
    pick the files; ImageFolderDataset numbers the folders in order."""
    written = save_digit_images(str(tmp_path), "val", size=8, classes=[3, 1], per_class=4)
    assert sorted(os.listdir(tmp_path)) == ["1", "3"]
    assert [d for _, d in written] == [1] * 4 + [3] * 4
    data, labels = load_digits("val")
    first_one = data[np.flatnonzero(labels == 1)[0], 0]
    img = mx.image.imread(written[0][0], flag=0).asnumpy()[:, :, 0]
    np.testing.assert_array_equal(img, np.rint(first_one * 255).astype(np.uint8))
    ds = mx.gluon.data.vision.ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["1", "3"] and len(ds) == 8 and ds[5][1] == 1


def test_scaled_up_images(tmp_path):
    written = save_digit_images(str(tmp_path), "train", size=20, classes=[0], per_class=None)
    assert len(written) == int((load_digits("train")[1] == 0).sum())
    img = mx.image.imread(written[0][0]).asnumpy()
    assert img.shape == (20, 20, 3) and img.max() > 100


def test_bad_arguments(tmp_path):
    with pytest.raises(mx.MXNetError, match="size"):
        save_digit_images(str(tmp_path), size=4)
    with pytest.raises(mx.MXNetError, match="digits 0-9"):
        save_digit_images(str(tmp_path), classes=[10])
    with pytest.raises(mx.MXNetError, match="split"):
        save_digit_images(str(tmp_path), split="test")
