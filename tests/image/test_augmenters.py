"""mx.image augmenters and CreateAugmenter: MXNet's formulas, dumps format and chain order."""
import json
import random

import numpy as np
import pytest

import mxref as mx


def _img(h=10, w=12, seed=0):
    return mx.nd.array(np.random.RandomState(seed).randint(0, 256, (h, w, 3)), dtype=np.uint8)


def test_dumps_is_mxnet_json():
    """dumps() gives [lowercase class name, kwargs] with arrays as lists; composites nest."""
    assert json.loads(mx.image.ResizeAug(8).dumps()) == ["resizeaug", {"size": 8, "interp": 2}]
    norm = mx.image.ColorNormalizeAug(mx.nd.array([1, 2, 3]), None)
    assert json.loads(norm.dumps()) == ["colornormalizeaug", {"mean": [1.0, 2.0, 3.0], "std": None}]
    seq = mx.image.SequentialAug([mx.image.CastAug(), mx.image.HorizontalFlipAug(0.5)])
    assert seq.dumps() == ["sequentialaug", ['["castaug", {"type": "float32"}]',
                                             '["horizontalflipaug", {"p": 0.5}]']]


def test_resize_and_crops():
    """Resize keeps the aspect ratio, ForceResize does not; crops give (H, W) = size[::-1]."""
    img = _img()
    assert mx.image.ResizeAug(5)(img).shape == (5, 6, 3)
    assert mx.image.ForceResizeAug((7, 4))(img).shape == (4, 7, 3)
    assert mx.image.CenterCropAug((6, 4))(img).shape == (4, 6, 3)
    np.testing.assert_array_equal(mx.image.CenterCropAug((6, 4))(img).asnumpy(), img.asnumpy()[3:7, 3:9])
    random.seed(1)
    assert mx.image.RandomCropAug((6, 4))(img).shape == (4, 6, 3)
    assert mx.image.RandomSizedCropAug((5, 5), 0.3, (0.75, 1.33))(img).shape == (5, 5, 3)
    with pytest.warns(DeprecationWarning):
        aug = mx.image.RandomSizedCropAug((5, 5), None, (0.75, 1.33), min_area=0.5)
    assert aug.area == 0.5


def test_color_jitters_follow_the_formulas():
    """Brightness scales, contrast blends toward the mean luma, saturation toward each pixel's luma."""
    x = _img().astype("float32").asnumpy()
    coef = np.array([0.299, 0.587, 0.114])
    for cls, ref in ((mx.image.BrightnessJitterAug, lambda a: x * a),
                     (mx.image.ContrastJitterAug, lambda a: x * a + (1 - a) * (x * coef).mean() * 3),
                     (mx.image.SaturationJitterAug,
                      lambda a: x * a + (1 - a) * (x * coef).sum(axis=2, keepdims=True))):
        random.seed(3)
        alpha = 1.0 + random.uniform(-0.4, 0.4)
        random.seed(3)
        out = cls(0.4)(mx.nd.array(x)).asnumpy()
        np.testing.assert_allclose(out, ref(alpha), rtol=1e-5, atol=1e-3)


def test_hue_lighting_gray_flip_cast_normalize():
    """Hue 0 is (nearly) the identity; lighting adds one RGB offset; gray equalizes channels; flip mirrors."""
    x = _img().astype("float32")
    # the rounded YIQ matrices are inverse only to ~3 digits, in MXNet too
    np.testing.assert_allclose(mx.image.HueJitterAug(0.0)(x).asnumpy(), x.asnumpy(), atol=1.0)
    np.random.seed(0)
    lit = mx.image.LightingAug(0.1, np.array([55.46, 4.794, 1.148]), np.eye(3))(x.copy()).asnumpy()
    off = lit - x.asnumpy()
    np.testing.assert_allclose(off, np.broadcast_to(off[0, 0], off.shape), atol=1e-4)
    gray = mx.image.RandomGrayAug(1.0)(x).asnumpy()
    np.testing.assert_allclose(gray[..., 0], gray[..., 2], rtol=1e-6)
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(1.0)(x).asnumpy(), x.asnumpy()[:, ::-1])
    assert mx.image.HorizontalFlipAug(0.0)(x) is x
    assert mx.image.CastAug()(_img()).dtype == np.float32
    norm = mx.image.ColorNormalizeAug([1.0, 2.0, 3.0], [2.0, 2.0, 2.0])(x).asnumpy()
    np.testing.assert_allclose(norm, (x.asnumpy() - [1, 2, 3]) / 2, rtol=1e-6)


def test_random_order_applies_all():
    """RandomOrderAug / ColorJitterAug apply each member once, in some order."""
    jit = mx.image.ColorJitterAug(0.1, 0.1, 0.0)
    assert [type(t).__name__ for t in jit.ts] == ["BrightnessJitterAug", "ContrastJitterAug"]
    seen = []
    order = mx.image.RandomOrderAug([lambda s: seen.append(1) or s, lambda s: seen.append(2) or s])
    order(0)
    assert sorted(seen) == [1, 2]


def test_create_augmenter_order():
    """CreateAugmenter builds MXNet's chain in MXNet's order."""
    augs = mx.image.CreateAugmenter((3, 8, 8), resize=10, rand_crop=True, rand_resize=True,
                                    rand_mirror=True, mean=True, std=True, brightness=0.1, hue=0.1,
                                    pca_noise=0.1, rand_gray=0.2)
    assert [type(a).__name__ for a in augs] == [
        "ResizeAug", "RandomSizedCropAug", "HorizontalFlipAug", "CastAug", "ColorJitterAug", "HueJitterAug",
        "LightingAug", "RandomGrayAug", "ColorNormalizeAug"]
    assert [type(a).__name__ for a in mx.image.CreateAugmenter((3, 8, 8))] == ["CenterCropAug", "CastAug"]
    np.testing.assert_allclose(augs[-1].mean.asnumpy(), [123.68, 116.28, 103.53], rtol=1e-6)
    random.seed(0)
    np.random.seed(0)
    out = _img(12, 14)
    for a in augs:
        out = a(out)
    assert out.shape == (8, 8, 3) and out.dtype == np.float32
