"""mx.nd.image / mx.sym.image operators: numpy references, values observed with MXNet 1.9.1,
shapes, dtypes, errors, randomness under mx.random.seed, and gradients."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd
from mxref.base import MXNetError
from tests.ops.ops_check import check_numeric_grad

IMG = np.array([[[200, 30, 90], [12, 250, 77], [128, 128, 128]],
                [[0, 0, 255], [40, 80, 160], [255, 255, 0]]], dtype=np.uint8)

# mx.nd.image.<op>(IMG, **params) under MXNet 1.9.1 (min_factor == max_factor fixes the draw).
MXNET = {
    ("random_brightness", 1.3): [[[255, 39, 116], [15, 255, 100], [166, 166, 166]],
                                 [[0, 0, 255], [52, 104, 208], [255, 255, 0]]],
    ("random_contrast", 0.6): [[[167, 65, 101], [54, 197, 93], [123, 123, 123]],
                               [[47, 47, 200], [71, 95, 143], [200, 200, 47]]],
    ("random_saturation", 0.3): [[[67, 16, 34], [9, 81, 29], [48, 48, 48]],
                                 [[20, 20, 96], [24, 36, 60], [76, 76, 0]]],
    ("random_hue", 0.3): [[[123, 200, 29], [29, 11, 250], [128, 128, 128]],
                          [[255, 0, 50], [160, 39, 103], [0, 255, 204]]],
}
LIGHTING = [[[196, 26, 87], [8, 246, 74], [124, 124, 125]], [[0, 0, 252], [36, 76, 157], [251, 251, 0]]]


@pytest.mark.parametrize("op,factor", sorted(MXNET))
def test_colour_ops_match_mxnet(op, factor):
    out = getattr(mx.nd.image, op)(mx.nd.array(IMG, dtype="uint8"), min_factor=factor, max_factor=factor)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out.asnumpy(), MXNET[(op, factor)])


def test_colour_ops_numpy_formulas_float():
    x = IMG.astype(np.float32)
    grey = x @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    a = mx.nd.array(x)
    got = mx.nd.image.random_contrast(a, min_factor=1.5, max_factor=1.5).asnumpy()
    np.testing.assert_allclose(got, x * 1.5 - 0.5 * grey.mean(), rtol=1e-5)     # no clipping in float
    got = mx.nd.image.random_brightness(a, min_factor=2, max_factor=2).asnumpy()
    np.testing.assert_allclose(got, x * 2)


def test_lighting_matches_mxnet_and_random_lighting_is_seeded():
    a = mx.nd.array(IMG, dtype="uint8")
    np.testing.assert_array_equal(mx.nd.image.adjust_lighting(a, alpha=(0.1, -0.2, 0.3)).asnumpy(), LIGHTING)
    mx.random.seed(3)
    one = mx.nd.image.random_lighting(a, alpha_std=2.0).asnumpy()
    mx.random.seed(3)
    np.testing.assert_array_equal(mx.nd.image.random_lighting(a, alpha_std=2.0).asnumpy(), one)
    grey = mx.nd.array(IMG[..., :1], dtype="uint8")
    np.testing.assert_array_equal(mx.nd.image.random_lighting(grey, alpha_std=5.0).asnumpy(), IMG[..., :1])


def test_to_tensor_and_normalize():
    t = mx.nd.image.to_tensor(mx.nd.array(IMG, dtype="uint8"))
    assert t.dtype == np.float32 and t.shape == (3, 2, 3)
    np.testing.assert_allclose(t.asnumpy(), IMG.transpose(2, 0, 1) / 255, rtol=1e-6)
    batch = mx.nd.image.to_tensor(mx.nd.array(np.stack([IMG, IMG]), dtype="uint8"))
    assert batch.shape == (2, 3, 2, 3)
    n = mx.nd.image.normalize(t, mean=(0.1, 0.2, 0.3), std=(0.5, 0.6, 0.7)).asnumpy()
    mean, std = np.array([.1, .2, .3])[:, None, None], np.array([.5, .6, .7])[:, None, None]
    want = (IMG.transpose(2, 0, 1) / 255 - mean) / std
    np.testing.assert_allclose(n, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(n[0, 0], [1.36863, -0.10588, 0.80392], atol=1e-5)   # MXNet 1.9.1
    one = mx.nd.image.normalize(batch, mean=0.5, std=2).asnumpy()
    np.testing.assert_allclose(one, (batch.asnumpy() - 0.5) / 2, rtol=1e-6)
    with pytest.raises(MXNetError, match="_image_normalize"):
        mx.nd.image.normalize(mx.nd.ones((4, 2, 2)), mean=(0, 0), std=1).wait_to_read()


def test_resize_crop_flip_shapes_and_values():
    a = mx.nd.array(IMG, dtype="uint8")
    assert mx.nd.image.resize(a, size=(5, 4)).shape == (4, 5, 3)
    assert mx.nd.image.resize(a, size=4, keep_ratio=True).shape == (4, 6, 3)
    np.testing.assert_array_equal(mx.nd.image.resize(a, size=2, keep_ratio=True).asnumpy(), IMG)
    batch = mx.nd.array(np.stack([IMG, IMG[::-1]]), dtype="float32")
    out = mx.nd.image.resize(batch, size=(6, 4), interp=0).asnumpy()
    np.testing.assert_array_equal(out[1], np.repeat(np.repeat(IMG[::-1], 2, 0), 2, 1))
    np.testing.assert_array_equal(mx.nd.image.crop(a, 1, 0, 2, 2).asnumpy(), IMG[0:2, 1:3])
    np.testing.assert_array_equal(mx.nd.image.flip_left_right(a).asnumpy(), IMG[:, ::-1])
    np.testing.assert_array_equal(mx.nd.image.flip_top_bottom(batch).asnumpy(), batch.asnumpy()[:, ::-1])
    with pytest.raises(MXNetError, match="_image_crop"):
        mx.nd.image.crop(a, 2, 0, 2, 2).wait_to_read()
    with pytest.raises(MXNetError, match="_image_resize"):
        mx.nd.image.resize(mx.nd.ones((2, 2)), size=3).wait_to_read()


def test_random_ops_follow_mx_random_seed():
    a = mx.nd.array(np.random.RandomState(0).randint(0, 256, (4, 5, 3)), dtype="uint8")
    seen = set()
    for seed in range(8):
        mx.random.seed(seed)
        f = mx.nd.image.random_flip_left_right(a).asnumpy()
        assert (f == a.asnumpy()).all() or (f == a.asnumpy()[:, ::-1]).all()
        seen.add(bool((f == a.asnumpy()).all()))
        mx.random.seed(seed)
        jit = mx.nd.image.random_color_jitter(a, brightness=0.3, contrast=0.3, saturation=0.3, hue=0.1)
        mx.random.seed(seed)
        again = mx.nd.image.random_color_jitter(a, brightness=0.3, contrast=0.3, saturation=0.3, hue=0.1)
        np.testing.assert_array_equal(jit.asnumpy(), again.asnumpy())
    assert seen == {True, False}
    with pytest.raises(MXNetError):
        mx.nd.image.random_hue(a, min_factor=-1, max_factor=-1)


def test_gradients():
    rng = np.random.RandomState(0)
    check_numeric_grad("_image_to_tensor", rng.rand(3, 4, 3), eps=1e-2, rtol=1e-3)   # float32 out
    check_numeric_grad("_image_normalize", rng.rand(2, 3, 4, 2), mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 4.0))
    check_numeric_grad("_image_flip_left_right", rng.rand(3, 4, 3))
    check_numeric_grad("_image_flip_top_bottom", rng.rand(2, 3, 4, 1))
    check_numeric_grad("_image_crop", rng.rand(4, 5, 3), x=1, y=2, width=3, height=2)
    for interp in range(5):
        check_numeric_grad("_image_resize", rng.rand(5, 6, 2), size=(4, 7), interp=interp)
    check_numeric_grad("_image_resize", rng.rand(2, 3, 4, 1), size=2, keep_ratio=True)
    x = mx.nd.array(rng.rand(3, 4, 3))
    x.attach_grad()
    w = mx.nd.array(rng.rand(3, 4, 3))
    mx.random.seed(1)
    with autograd.record():
        y = mx.nd.image.random_flip_top_bottom(x)
        loss = (y * w).sum()
    loss.backward()
    flipped = not np.array_equal(y.asnumpy(), x.asnumpy())
    np.testing.assert_allclose(x.grad.asnumpy(), w.asnumpy()[::-1] if flipped else w.asnumpy())


def test_symbol_forms():
    data = mx.sym.Variable("data")
    net = mx.sym.image.normalize(mx.sym.image.to_tensor(mx.sym.image.crop(data, 0, 0, 3, 2)),
                                 mean=(0.5,), std=(0.25,))
    _, out_shapes, _ = net.infer_shape(data=(4, 5, 3))
    assert out_shapes == [(3, 2, 3)]
    ex = net.bind(mx.cpu(), {"data": mx.nd.array(IMG.astype(np.float32).repeat(2, 0).repeat(2, 1)[:4, :5])})
    out = ex.forward()[0].asnumpy()
    src = IMG.astype(np.float32).repeat(2, 0).repeat(2, 1)[:2, :3]
    np.testing.assert_allclose(out, (src.transpose(2, 0, 1) / 255 - 0.5) / 0.25, rtol=1e-5)
    r = mx.sym.image.resize(data, size=(4, 2))
    assert r.infer_shape(data=(2, 3, 5, 3))[1] == [(2, 2, 4, 3)]
