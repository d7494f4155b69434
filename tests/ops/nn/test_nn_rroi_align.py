"""contrib.RROIAlign: rotated ROI Align against a per-sample loop of the same rules; no gradient."""
import math

import numpy as np
import pytest
from nn_check import forward

import mxref as mx
from mxref.base import MXNetError


def _bilinear(img, y, x):
    h, w = img.shape
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y1, x1 = y0 + 1, x0 + 1
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1] + ly * (1 - lx) * img[y1, x0]
            + ly * lx * img[y1, x1])


def _loop(data, rois, pooled, scale, ratio):
    ph_n, pw_n = pooled
    out = np.zeros((len(rois), data.shape[1], ph_n, pw_n))
    for r, (b, cx, cy, w, h, th) in enumerate(rois):
        cx, cy, w, h = cx * scale, cy * scale, max(w * scale, 1.0), max(h * scale, 1.0)
        th = th * math.pi / 180
        gh = ratio if ratio > 0 else math.ceil(h / ph_n)
        gw = ratio if ratio > 0 else math.ceil(w / pw_n)
        for c in range(data.shape[1]):
            for ph in range(ph_n):
                for pw in range(pw_n):
                    acc = 0.0
                    for iy in range(gh):
                        yy = -h / 2 + ph * h / ph_n + (iy + 0.5) * h / ph_n / gh
                        for ix in range(gw):
                            xx = -w / 2 + pw * w / pw_n + (ix + 0.5) * w / pw_n / gw
                            acc += _bilinear(data[int(b), c], yy * math.cos(th) - xx * math.sin(th) + cy,
                                             xx * math.cos(th) + yy * math.sin(th) + cx)
                    out[r, c, ph, pw] = acc / (gh * gw)
    return out


@pytest.mark.parametrize("ratio", [-1, 2])
def test_matches_the_loop(ratio):
    rs = np.random.RandomState(0)
    data = rs.rand(2, 2, 8, 8)
    rois = np.concatenate([rs.randint(0, 2, (4, 1)), rs.uniform(0, 64, (4, 2)), rs.uniform(0, 64, (4, 2)),
                           rs.uniform(0, 180, (4, 1))], axis=1)
    (y,) = forward("_contrib_RROIAlign", [data, rois], pooled_size=(2, 3), spatial_scale=0.125,
                   sampling_ratio=ratio)
    np.testing.assert_allclose(y, _loop(data, rois, (2, 3), 0.125, ratio), rtol=1e-10, atol=1e-12)


def test_shapes_and_no_gradient():
    s = mx.sym.contrib.RROIAlign(mx.sym.var("d"), mx.sym.var("r"), pooled_size=(3, 4), spatial_scale=1.0)
    assert s.infer_shape(d=(1, 3, 8, 8), r=(5, 6))[1] == [(5, 3, 3, 4)]
    with pytest.raises(MXNetError, match="rois"):
        s.infer_shape(d=(1, 3, 8, 8), r=(5, 5))
    x = mx.nd.ones((1, 1, 4, 4))
    x.attach_grad()
    with pytest.raises(MXNetError, match="not supported"):
        with mx.autograd.record():
            y = mx.nd.contrib.RROIAlign(x, mx.nd.array([[0, 2, 2, 2, 2, 0]]), pooled_size=(1, 1),
                                        spatial_scale=1.0)
        y.backward()
