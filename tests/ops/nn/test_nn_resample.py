"""contrib.BilinearResize2D and contrib.AdaptiveAvgPooling2D: loop references, MXNet's numbers, gradients."""
import math

import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError


def resize_ref(x, oh, ow, align):
    N, C, H, W = x.shape
    out = np.zeros((N, C, oh, ow))

    def src(d, i, o):
        if i == o:
            return float(d)
        if o == 1:
            return 0.0          # MXNet's scale is 0 for a single output pixel
        if align:
            return d * (i - 1) / (o - 1)
        return max((d + 0.5) * i / o - 0.5, 0.0)
    for r in range(oh):
        y = src(r, H, oh)
        y0 = int(y)
        y1 = y0 + 1 if y0 < H - 1 else y0
        for c in range(ow):
            x_ = src(c, W, ow)
            x0 = int(x_)
            x1 = x0 + 1 if x0 < W - 1 else x0
            ly, lx = y - y0, x_ - x0
            out[:, :, r, c] = ((1 - ly) * ((1 - lx) * x[:, :, y0, x0] + lx * x[:, :, y0, x1])
                               + ly * ((1 - lx) * x[:, :, y1, x0] + lx * x[:, :, y1, x1]))
    return out


@pytest.mark.parametrize("align", [True, False])
@pytest.mark.parametrize("size", [(5, 3), (2, 9), (1, 1), (4, 6)])
def test_resize_forward(rng, align, size):
    """Each output pixel interpolates its two row and two column neighbours."""
    x = rng.standard_normal((2, 3, 4, 6))
    (y,) = forward("_contrib_BilinearResize2D", [x], height=size[0], width=size[1], align_corners=align)
    np.testing.assert_allclose(y, resize_ref(x, *size, align), rtol=1e-6, atol=1e-6)


def test_resize_matches_mxnet():
    """Numbers MXNet 1.9.1 computed for arange(12) as 3x4 resized to 5x3."""
    x = mx.nd.array(np.arange(12).reshape(1, 1, 3, 4))
    y = mx.nd.contrib.BilinearResize2D(x, height=5, width=3)
    np.testing.assert_allclose(y.asnumpy().ravel(), [0, 1.5, 3, 2, 3.5, 5, 4, 5.5, 7, 6, 7.5, 9, 8, 9.5, 11])
    y = mx.nd.contrib.BilinearResize2D(x, height=5, width=3, align_corners=False)
    np.testing.assert_allclose(y.asnumpy().ravel(), [
        0.16666669, 1.5, 2.8333335, 1.7666668, 3.1000004, 4.4333334, 4.1666665, 5.5, 6.8333335,
        6.5666676, 7.9000006, 9.2333336, 8.166667, 9.5, 10.833333], rtol=1e-6)


@pytest.mark.parametrize("kw,hw", [(dict(scale_height=0.5, scale_width=2.5), (2, 15)),
                                   (dict(mode="odd_scale", scale_height=2.0, scale_width=0.5), (9, 3)),
                                   (dict(mode="to_even_down"), (4, 6)), (dict(mode="to_even_up"), (6, 6)),
                                   (dict(mode="to_odd_down"), (5, 5)), (dict(mode="to_odd_up"), (5, 7))])
def test_resize_modes(kw, hw):
    """Output sizes of the scale and parity modes (input 5 x 6)."""
    s = mx.sym.contrib.BilinearResize2D(mx.sym.var("d"), **kw)
    assert s.infer_shape(d=(1, 2, 5, 6))[1] == [(1, 2) + hw]


def test_resize_like_and_gradient(rng):
    """mode='like' takes the second input's height and width; gradients by central differences."""
    x, like = rng.standard_normal((1, 2, 4, 5)), np.zeros((1, 2, 3, 7))
    (y,) = forward("_contrib_BilinearResize2D", [x, like], mode="like")
    assert y.shape == (1, 2, 3, 7)
    check_gradient("_contrib_BilinearResize2D", [x, like], wrt=[0], mode="like", align_corners=False)
    check_gradient("_contrib_BilinearResize2D", [x], height=7, width=2)
    s = mx.sym.contrib.BilinearResize2D(mx.sym.var("d"), mx.sym.var("l"), mode="like")
    assert s.list_arguments() == ["d", "l"]
    with pytest.raises(MXNetError, match="scale_width"):
        s = mx.sym.contrib.BilinearResize2D(mx.sym.var("d"), mode="odd_scale", scale_height=2.)
        s.infer_shape(d=(1, 1, 3, 3))


def adaptive_ref(x, oh, ow):
    N, C, H, W = x.shape
    out = np.zeros((N, C, oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, he = math.floor(i * H / oh), math.ceil((i + 1) * H / oh)
            ws, we = math.floor(j * W / ow), math.ceil((j + 1) * W / ow)
            out[:, :, i, j] = x[:, :, hs:he, ws:we].mean(axis=(2, 3))
    return out


@pytest.mark.parametrize("size,hw", [((), (1, 1)), (3, (3, 3)), ((2, 5), (2, 5)), ((7, 9), (7, 9))])
def test_adaptive_avg_pooling(rng, size, hw):
    """Bin o averages [floor(o I/O), ceil((o+1) I/O)); gradient by central differences."""
    x = rng.standard_normal((2, 3, 5, 7))
    (y,) = forward("_contrib_AdaptiveAvgPooling2D", [x], output_size=size)
    np.testing.assert_allclose(y, adaptive_ref(x, *hw), rtol=1e-12)
    check_gradient("_contrib_AdaptiveAvgPooling2D", [x], output_size=size)
    assert mx.sym.contrib.AdaptiveAvgPooling2D(mx.sym.var("d"), output_size=size).infer_shape(
        d=(2, 3, 5, 7))[1] == [(2, 3) + hw]


def test_adaptive_avg_pooling_error():
    with pytest.raises(MXNetError, match="AdaptiveAvgPooling2D: 'data' must be 4-D"):
        mx.sym.contrib.AdaptiveAvgPooling2D(mx.sym.var("d")).infer_shape(d=(2, 3))
