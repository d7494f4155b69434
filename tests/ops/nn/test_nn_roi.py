"""ROIPooling and contrib.ROIAlign: pointwise loop references, MXNet's numbers, gradients, shapes."""
import math

import numpy as np
import pytest
from nn_check import check_gradient, forward, grads

import mxref as mx
from mxref.base import MXNetError


def roipool_ref(x, rois, ph, pw, scale):
    N, C, H, W = x.shape
    out = np.zeros((len(rois), C, ph, pw))
    for r, (b, x1, y1, x2, y2) in enumerate(rois):
        x1, y1, x2, y2 = (int(math.floor(v * scale + 0.5)) for v in (x1, y1, x2, y2))
        h, w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(ph):
            for j in range(pw):
                hs = min(max(math.floor(i * h / ph) + y1, 0), H)
                he = min(max(math.ceil((i + 1) * h / ph) + y1, 0), H)
                ws = min(max(math.floor(j * w / pw) + x1, 0), W)
                we = min(max(math.ceil((j + 1) * w / pw) + x1, 0), W)
                if he > hs and we > ws:
                    out[r, :, i, j] = x[int(b), :, hs:he, ws:we].max(axis=(1, 2))
    return out


def bilinear(plane, y, x):
    H, W = plane.shape
    if y < -1 or y > H or x < -1 or x > W:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= H - 1:
        y0 = y1 = H - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= W - 1:
        x0 = x1 = W - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * plane[y0, x0] + (1 - ly) * lx * plane[y0, x1]
            + ly * (1 - lx) * plane[y1, x0] + ly * lx * plane[y1, x1])


def roialign_ref(x, rois, ph, pw, scale, ratio, aligned):
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for r, roi in enumerate(rois):
        if roi[0] < 0:
            continue
        x1, y1, x2, y2 = (v * scale - off for v in roi[1:])
        rw, rh = (x2 - x1, y2 - y1) if aligned else (max(x2 - x1, 1.0), max(y2 - y1, 1.0))
        gy = ratio if ratio > 0 else math.ceil(rh / ph)
        gx = ratio if ratio > 0 else math.ceil(rw / pw)
        for c in range(x.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    acc = sum(bilinear(x[int(roi[0]), c], y1 + i * rh / ph + (iy + .5) * rh / ph / gy,
                                       x1 + j * rw / pw + (ix + .5) * rw / pw / gx)
                              for iy in range(gy) for ix in range(gx))
                    out[r, c, i, j] = acc / (gy * gx)
    return out


ROIS = np.array([[0, 1.2, 2.1, 7.7, 6.3], [1, 0, 0, 10, 8], [1, 3.3, 1.5, 4.1, 2.0], [0, -2, -1, 12, 11]])


def test_roipooling_forward(rng):
    """Max over each bin, the ROI rounded half away from zero and clipped to the map."""
    x = rng.standard_normal((2, 3, 9, 11))
    out, idx = forward("ROIPooling", [x, ROIS], pooled_size=(3, 2), spatial_scale=0.9)
    np.testing.assert_array_equal(out, roipool_ref(x, ROIS, 3, 2, 0.9))
    np.testing.assert_array_equal(x.reshape(-1)[idx.astype(np.int64)], out)


def test_roipooling_docstring_and_gradient(rng):
    """MXNet's documented example; the gradient goes to each bin's maximum."""
    x = np.arange(48, dtype=np.float32).reshape(1, 1, 8, 6)
    y = mx.nd.ROIPooling(mx.nd.array(x), mx.nd.array([[0, 0, 0, 4, 4]]), pooled_size=(2, 2),
                         spatial_scale=0.7)
    np.testing.assert_array_equal(y.asnumpy(), [[[[7, 9], [19, 21]]]])
    check_gradient("ROIPooling", [rng.standard_normal((2, 3, 9, 11)), ROIS], wrt=[0],
                   pooled_size=(3, 2), spatial_scale=0.9)


@pytest.mark.parametrize("ratio,aligned", [(-1, False), (2, False), (-1, True), (3, True)])
def test_roialign_forward(rng, ratio, aligned):
    """Equals the pointwise bilinear-sample average of Detectron's algorithm."""
    x = rng.standard_normal((2, 2, 9, 11))
    (out,) = forward("_contrib_ROIAlign", [x, ROIS], pooled_size=(3, 2), spatial_scale=0.9,
                     sample_ratio=ratio, aligned=aligned)
    np.testing.assert_allclose(out, roialign_ref(x, ROIS, 3, 2, 0.9, ratio, aligned), rtol=1e-10, atol=1e-12)


def test_roialign_matches_mxnet():
    """Numbers MXNet 1.9.1 computed (data arange/10, one ROI, sample_ratio 2)."""
    d = mx.nd.array(np.arange(40).reshape(1, 2, 4, 5) / 10.0)
    rois = mx.nd.array([[0, 0.5, 0.7, 3.2, 2.9]])
    want = {False: [0.7425000668, 0.8775000572, 1.2925000191, 1.4275000095, 2.7424998283, 2.8775000572,
                    3.2924997807, 3.4275000095],
            True: [0.4425000250, 0.5774999857, 0.9925000072, 1.1274999380, 2.4425001144, 2.5775001049,
                   2.9924998283, 3.1275000572]}
    for aligned, w in want.items():
        got = mx.nd.contrib.ROIAlign(d, rois, pooled_size=(2, 2), spatial_scale=1.0, sample_ratio=2,
                                     aligned=aligned)
        np.testing.assert_allclose(got.asnumpy().ravel(), w, rtol=1e-6)


def test_roialign_position_sensitive_and_negative_batch(rng):
    """Bin (i, j) of output channel c reads channel c*ph*pw + i*pw + j; batch index < 0 gives 0."""
    x = rng.standard_normal((1, 8, 6, 6))
    rois = np.array([[0, 0.5, 0.5, 4.5, 5.0], [-1, 0, 0, 3, 3]])
    (ps,) = forward("_contrib_ROIAlign", [x, rois], pooled_size=(2, 2), spatial_scale=1.0, sample_ratio=2,
                    position_sensitive=True)
    (full,) = forward("_contrib_ROIAlign", [x, rois], pooled_size=(2, 2), spatial_scale=1.0, sample_ratio=2)
    assert ps.shape == (2, 2, 2, 2)
    for c in range(2):
        for i in range(2):
            for j in range(2):
                assert ps[0, c, i, j] == full[0, c * 4 + i * 2 + j, i, j]
    assert not ps[1].any() and not full[1].any()


@pytest.mark.parametrize("ps", [False, True])
def test_roialign_gradient(rng, ps):
    """The data gradient agrees with central differences; rois get none."""
    x = rng.standard_normal((2, 4, 7, 8))
    rois = np.array([[0, 1.2, 0.5, 5.3, 6.1], [1, 0.1, 0.2, 7.5, 3.3]])
    check_gradient("_contrib_ROIAlign", [x, rois], wrt=[0], pooled_size=(2, 2), spatial_scale=0.8,
                   position_sensitive=ps)
    g = grads("_contrib_ROIAlign", [x, rois], [np.ones((2, 4, 2, 2))], pooled_size=(2, 2), spatial_scale=0.8)
    assert g[1] is None


def test_roi_shapes_and_errors():
    """Output (num_rois, C, ph, pw); rois must be (R, 5); PS channels must divide."""
    s = mx.sym.contrib.ROIAlign(mx.sym.var("d"), mx.sym.var("r"), pooled_size=(2, 3), spatial_scale=1.0)
    assert s.infer_shape(d=(2, 6, 8, 8), r=(5, 5))[1] == [(5, 6, 2, 3)]
    p = mx.sym.ROIPooling(mx.sym.var("d"), mx.sym.var("r"), pooled_size=(2, 3), spatial_scale=1.0)
    assert p.list_outputs() == [p.name + "_output"]
    assert p.infer_shape(d=(2, 6, 8, 8), r=(5, 5))[1] == [(5, 6, 2, 3)]
    with pytest.raises(MXNetError, match="rois"):
        p.infer_shape(d=(2, 6, 8, 8), r=(5, 4))
    with pytest.raises(MXNetError, match="position_sensitive"):
        mx.sym.contrib.ROIAlign(mx.sym.var("d"), mx.sym.var("r"), pooled_size=(2, 2), spatial_scale=1.0,
                                position_sensitive=True).infer_shape(d=(1, 6, 4, 4), r=(1, 5))
