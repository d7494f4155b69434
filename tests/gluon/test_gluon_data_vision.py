"""gluon.data.vision: transforms against numpy / Pillow references, and the datasets on small
files written in their standard formats (idx .gz, CIFAR .bin, PNG folders, .rec/.idx, .lst)."""
import gzip
import os
import struct

import numpy as np
import pytest
from PIL import Image

import mxref as mx
from mxref import recordio
from mxref.base import MXNetError
from mxref.gluon.data import DataLoader
from mxref.gluon.data.vision import (
    CIFAR10,
    CIFAR100,
    MNIST,
    FashionMNIST,
    ImageFolderDataset,
    ImageListDataset,
    ImageRecordDataset,
    transforms,
)
from mxref.gluon.nn import HybridSequential

RNG = np.random.RandomState(0)
IMG = RNG.randint(0, 256, (6, 8, 3)).astype(np.uint8)


# -- transforms ----------------------------------------------------------------------------------

def test_compose_fuses_consecutive_hybrid_transforms():
    t = transforms.Compose([transforms.Cast("float32"), transforms.ToTensor(),
                            transforms.RandomApply(transforms.Cast("float64"), p=0.0),
                            transforms.Normalize(0.5, 0.25)])
    kinds = [type(c) for c in t._children.values()]
    assert kinds == [HybridSequential, transforms.RandomApply, transforms.Normalize]
    out = t(mx.nd.array(IMG, dtype="uint8"))
    want = (IMG.astype(np.float32).transpose(2, 0, 1) / 255 - 0.5) / 0.25
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_resize_and_crops_against_pillow_and_numpy():
    x = mx.nd.array(IMG, dtype="uint8")
    np.testing.assert_array_equal(transforms.Resize((4, 3), interpolation=0)(x).asnumpy(), IMG[::2, ::2])
    near = transforms.Resize((16, 12), interpolation=0)(x).asnumpy()
    pil = np.asarray(Image.fromarray(IMG).resize((16, 12), Image.NEAREST))
    np.testing.assert_array_equal(near, pil)                    # doubling: both repeat each pixel
    assert transforms.Resize(3, keep_ratio=True)(x).shape == (3, 4, 3)
    np.testing.assert_array_equal(transforms.CropResize(1, 2, 3, 2)(x).asnumpy(), IMG[2:4, 1:4])
    np.testing.assert_array_equal(transforms.CenterCrop(4)(x).asnumpy(), IMG[1:5, 2:6])
    mx.random.seed(0)
    np.random.seed(0)
    assert transforms.RandomResizedCrop(5)(x).shape == (5, 5, 3)
    with pytest.raises(MXNetError):
        transforms.CropResize(6, 0, 4, 4)(x)


def test_colour_transforms_draw_from_the_seed_and_keep_dtype():
    x = mx.nd.array(IMG, dtype="uint8")
    for t in (transforms.RandomBrightness(brightness=0.3), transforms.RandomContrast(contrast=0.3),
              transforms.RandomSaturation(0.3), transforms.RandomHue(0.3),
              transforms.RandomColorJitter(0.2, 0.2, 0.2, 0.1), transforms.RandomLighting(0.5),
              transforms.RandomFlipLeftRight(), transforms.RandomFlipTopBottom()):
        mx.random.seed(5)
        a = t(x).asnumpy()
        mx.random.seed(5)
        np.testing.assert_array_equal(t(x).asnumpy(), a)
        assert a.dtype == np.uint8 and a.shape == IMG.shape
    brighter = transforms.RandomBrightness(0.0)(x).asnumpy()
    np.testing.assert_array_equal(brighter, IMG)                # factor range [1, 1]


def test_rotate_quarter_turns_and_random_rotation():
    img = mx.nd.array([[[0., 0., 0.], [0., 0., 1.], [0., 0., 0.]]])
    np.testing.assert_allclose(transforms.Rotate(90.)(img).asnumpy(), [[[0, 1, 0], [0, 0, 0], [0, 0, 0]]],
                               atol=1e-6)
    np.testing.assert_allclose(transforms.Rotate(180.)(img).asnumpy(), [[[0, 0, 0], [1, 0, 0], [0, 0, 0]]],
                               atol=1e-6)
    with pytest.raises(TypeError):
        transforms.Rotate(10.)(mx.nd.ones((3, 4, 4), dtype="uint8"))
    with pytest.raises(ValueError):
        transforms.RandomRotation([-10, 10], rotate_with_proba=2)
    assert transforms.RandomRotation([-10, 10])(mx.nd.ones((2, 3, 5, 6))).shape == (2, 3, 5, 6)


# -- datasets ------------------------------------------------------------------------------------

def _write_idx(folder, prefix, images, labels):
    with gzip.open(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, len(images), 28, 28) + images.tobytes())
    with gzip.open(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">II", 2049, len(labels)) + labels.tobytes())


@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
def test_mnist_idx_files(tmp_path, cls):
    images = RNG.randint(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    _write_idx(tmp_path, "train", images, labels)
    _write_idx(tmp_path, "t10k", images[:2], labels[:2])
    train = cls(root=str(tmp_path))
    assert len(train) == 5 and len(cls(root=str(tmp_path), train=False)) == 2
    data, label = train[2]
    assert data.shape == (28, 28, 1) and data.dtype == np.uint8 and label == 4
    np.testing.assert_array_equal(data.asnumpy()[..., 0], images[2])
    scaled = train.transform_first(lambda d: d.astype("float32") / 255)
    np.testing.assert_allclose(scaled[0][0].asnumpy()[..., 0], images[0] / 255, rtol=1e-6)
    batches = list(DataLoader(scaled, batch_size=2, num_workers=2))
    assert [b[0].shape for b in batches] == [(2, 28, 28, 1), (2, 28, 28, 1), (1, 28, 28, 1)]
    np.testing.assert_array_equal(np.concatenate([b[1].asnumpy() for b in batches]), labels)


def test_missing_files_name_the_files_and_folder(tmp_path, monkeypatch):
    with pytest.raises(MXNetError, match=r"t10k-images-idx3-ubyte\.gz.*" + str(tmp_path)):
        MNIST(root=str(tmp_path), train=False)
    monkeypatch.setenv("MXNET_HOME", str(tmp_path / "home"))
    with pytest.raises(MXNetError, match=r"data_batch_1\.bin.*home.datasets.cifar10"):
        CIFAR10()


def test_cifar_binary_files(tmp_path):
    pix = RNG.randint(0, 256, (4, 3, 32, 32)).astype(np.uint8)
    labels = np.array([0, 9, 2, 7], dtype=np.uint8)
    rec = np.concatenate([labels[:, None], pix.reshape(4, -1)], axis=1)
    for i in range(1, 6):
        rec.tofile(str(tmp_path / f"data_batch_{i}.bin"))
    rec[:1].tofile(str(tmp_path / "test_batch.bin"))
    c10 = CIFAR10(root=str(tmp_path), transform=lambda d, lab: (d.astype("float32"), lab + 100))
    assert len(c10) == 20 and len(CIFAR10(root=str(tmp_path), train=False)) == 1
    data, label = c10[5]
    np.testing.assert_array_equal(data.asnumpy(), pix[1].transpose(1, 2, 0))
    assert label == 109
    rec100 = np.concatenate([labels[:, None] // 2, labels[:, None] + 50, pix.reshape(4, -1)], axis=1)
    rec100.tofile(str(tmp_path / "train.bin"))
    assert CIFAR100(root=str(tmp_path))[1][1] == 4
    assert CIFAR100(root=str(tmp_path), fine_label=True)[1][1] == 59


def _png_folder(root):
    imgs = {}
    for cls in ("cat", "dog"):
        os.makedirs(root / cls)
        for i in range(2):
            img = RNG.randint(0, 256, (5, 4, 3)).astype(np.uint8)
            Image.fromarray(img).save(str(root / cls / f"{i}.png"))
            imgs[(cls, i)] = img
    (root / "dog" / "notes.txt").write_text("not an image")
    return imgs


def test_image_folder_and_list_datasets(tmp_path):
    imgs = _png_folder(tmp_path)
    with pytest.warns(UserWarning, match="notes.txt"):
        ds = ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["cat", "dog"] and [lab for _, lab in ds.items] == [0, 0, 1, 1]
    data, label = ds[3]
    np.testing.assert_array_equal(data.asnumpy(), imgs[("dog", 1)])
    assert label == 1
    with pytest.warns(UserWarning):
        grey = ImageFolderDataset(str(tmp_path), flag=0)[0][0]
    assert grey.shape == (5, 4, 1)
    tensors = ds.transform_first(transforms.ToTensor())
    assert tensors[0][0].shape == (3, 5, 4)
    batch = next(iter(DataLoader(tensors, batch_size=4, num_workers=2)))
    assert batch[0].shape == (4, 3, 5, 4) and batch[1].asnumpy().tolist() == [0, 0, 1, 1]
    lst = tmp_path / "imgs.lst"
    lst.write_text("0\t1.0\tdog/0.png\n1\t0.0\t2.0\tcat/1.png\n")
    listed = ImageListDataset(str(tmp_path), str(lst))
    np.testing.assert_array_equal(listed[0][0].asnumpy(), imgs[("dog", 0)])
    assert listed[0][1] == 1.0 and listed[1][1].tolist() == [0.0, 2.0]
    assert ImageListDataset(str(tmp_path), [[3, "cat/0.png"]])[0][1] == 3.0


def test_image_record_dataset(tmp_path):
    rec, idx = str(tmp_path / "x.rec"), str(tmp_path / "x.idx")
    writer = recordio.MXIndexedRecordIO(idx, rec, "w")
    imgs = [RNG.randint(0, 256, (6, 5, 3)).astype(np.uint8) for _ in range(3)]
    for i, img in enumerate(imgs):
        writer.write_idx(i, recordio.pack_img(recordio.IRHeader(0, float(i * 2), i, 0), img, img_fmt=".png"))
    writer.close()
    ds = ImageRecordDataset(rec)
    assert len(ds) == 3
    data, label = ds[1]
    # pack_img stores OpenCV's BGR order and imdecode returns RGB, so channels come back reversed
    np.testing.assert_array_equal(data.asnumpy(), imgs[1][..., ::-1])
    assert label == 2.0
    loader = DataLoader(ds.transform_first(transforms.ToTensor()), batch_size=3, num_workers=2)
    (x, y), = list(loader)
    assert x.shape == (3, 3, 6, 5) and y.asnumpy().tolist() == [0.0, 2.0, 4.0]
