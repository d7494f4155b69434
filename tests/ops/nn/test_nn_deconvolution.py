"""Deconvolution: adjoint of Convolution; stride/pad/adj/target_shape/groups vs MXNet 1.9.1."""
import numpy as np
import pytest
from nn_check import check_fixture, check_gradient, fixture_cases, forward

from mxref.ops import registry

CASES = fixture_cases("Deconvolution")
OP = registry.get("Deconvolution")


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    """Output shape and values, and data/weight/bias gradients equal MXNet's."""
    check_fixture("Deconvolution", CASES[name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_is_adjoint_of_convolution(rng, dtype):
    """<deconv(x, W), y> == <x, conv(y, W)>: deconvolution is convolution's transpose."""
    kw = {"kernel": (3, 2), "stride": (2, 1), "pad": (1, 0), "no_bias": True}
    x = rng.standard_normal((2, 4, 3, 5)).astype(dtype)
    w = rng.standard_normal((4, 3, 3, 2)).astype(dtype)
    (dy,) = forward("Deconvolution", [x, w], num_filter=3, **kw)
    assert dy.dtype == dtype and dy.shape == (2, 3, 5, 6)
    y = rng.standard_normal(dy.shape).astype(dtype)
    (cy,) = forward("Convolution", [y, w], num_filter=4, **kw)
    np.testing.assert_allclose((dy * y).sum(), (x * cy).sum(), rtol=1e-4)


@pytest.mark.parametrize("kw", [
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "adj": (1, 0), "no_bias": False},
    {"kernel": (2, 2), "num_group": 2, "dilate": (2, 1)},
    {"kernel": (3,), "stride": (2,), "target_shape": (6,)},
    {"kernel": (2, 2, 1), "stride": (2, 1, 1), "pad": (0, 1, 0), "adj": (1, 0, 0), "no_bias": False},
])
def test_gradient(rng, kw):
    """Gradients agree with central differences."""
    nd = len(kw["kernel"])
    x = rng.standard_normal((2, 2) + (3, 4, 2)[:nd])
    w = rng.standard_normal((2, 4 // kw.get("num_group", 1)) + kw["kernel"])
    ins = [x, w] if kw.get("no_bias", True) else [x, w, rng.standard_normal(4)]
    check_gradient("Deconvolution", ins, num_filter=4, **kw)


def test_target_shape_sets_output():
    """target_shape fixes the output size and the weight is (C, F/G, *kernel)."""
    p = OP.parse_params({"kernel": (4, 4), "num_filter": 2, "stride": (2, 2), "target_shape": (8, 8)})
    assert OP.infer_shape(p, [(1, 3, 4, 4), None]) == ([(1, 3, 4, 4), (3, 2, 4, 4)], [(1, 2, 8, 8)])
