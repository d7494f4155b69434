"""contrib.PSROIPooling: position-sensitive average pooling, values from MXNet 1.9.1, gradients."""
import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError

ROIS = np.array([[0, 10, 22, 161, 173], [1, 20.5, 15, 154, 160], [0, 3, 3, 9, 9]])
KW = dict(spatial_scale=0.0625, output_dim=2, pooled_size=3)


def test_matches_mxnet():
    """Rows MXNet 1.9.1 printed for this data (RandomState(0))."""
    data = np.random.RandomState(0).rand(2, 18, 14, 14).astype(np.float32)
    (y,) = forward("_contrib_PSROIPooling", [data, ROIS.astype(np.float32)], **KW)
    assert y.shape == (3, 2, 3, 3) and y.dtype == np.float32
    np.testing.assert_allclose(y[1, 1, 0], [0.5539566, 0.4691051, 0.4240003], rtol=1e-6)
    np.testing.assert_allclose(y[2, 0, 1], [0.06107854, 0.10241376, 0.9217191], rtol=1e-6)


def test_gradient_and_symbol(rng):
    data = rng.standard_normal((2, 8, 6, 6))
    rois = np.array([[0, 0, 0, 40, 30], [1, 8, 16, 60, 60]], np.float64)
    kw = dict(spatial_scale=0.125, output_dim=2, pooled_size=2)
    check_gradient("_contrib_PSROIPooling", [data, rois], wrt=[0], **kw)
    s = mx.sym.contrib.PSROIPooling(spatial_scale=0.0625, output_dim=2, pooled_size=3, name="p")
    assert s.list_arguments() == ["p_data", "p_rois"]
    assert s.infer_shape(p_data=(1, 18, 14, 14), p_rois=(2, 5))[1] == [(2, 2, 3, 3)]
    with pytest.raises(MXNetError, match="output_dim"):
        s.infer_shape(p_data=(1, 8, 14, 14), p_rois=(2, 5))
