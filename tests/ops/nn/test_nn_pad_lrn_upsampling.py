"""Pad, LRN and UpSampling: forward and gradients vs MXNet 1.9.1 fixtures and central differences."""
import numpy as np
import pytest
from nn_check import check_fixture, check_gradient, fixture_cases, forward

from mxref.base import MXNetError
from mxref.ops import registry

FIX = {op: fixture_cases(op) for op in ("Pad", "LRN", "UpSampling")}


@pytest.mark.parametrize("op,name", [(op, n) for op, cases in FIX.items() for n in sorted(cases)])
def test_matches_mxnet(op, name):
    """Outputs and gradients equal MXNet's (pad modes, LRN windows, nearest/bilinear upsampling)."""
    check_fixture(op, FIX[op][name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(rng, mode, dtype):
    """Pad equals numpy.pad on the spatial axes; its gradient is the adjoint (numeric check)."""
    x = rng.standard_normal((1, 2, 3, 4)).astype(dtype)
    pw = (0, 0, 0, 0, 2, 1, 1, 2)
    (y,) = forward("Pad", [x], mode=mode, pad_width=pw)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, np.pad(x, [(0, 0), (0, 0), (2, 1), (1, 2)], mode=mode))
    check_gradient("Pad", [x.astype(np.float64)], mode=mode, pad_width=pw)
    with pytest.raises(MXNetError, match="Pad"):
        registry.get("Pad").infer_shape(registry.get("Pad").parse_params(
            {"mode": mode, "pad_width": (1, 0, 0, 0, 0, 0, 0, 0)}), [(1, 2, 3, 4)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lrn(rng, dtype):
    """LRN divides by (knorm + alpha/n * window sum of squares)^beta; gradient is numeric-exact."""
    x = rng.standard_normal((2, 5, 2, 2)).astype(dtype)
    (y, s) = forward("LRN", [x], nsize=3, alpha=0.5)
    sq = np.pad(x.astype(np.float64) ** 2, [(0, 0), (1, 1), (0, 0), (0, 0)])
    want = 2 + 0.5 / 3 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])
    assert y.dtype == dtype
    np.testing.assert_allclose(s, want, rtol=1e-5)
    check_gradient("LRN", [x.astype(np.float64)], nsize=3, alpha=0.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_upsampling_nearest(rng, dtype):
    """Nearest upsampling repeats pixels; the gradient sums each block (numeric check)."""
    x = rng.standard_normal((1, 2, 2, 3)).astype(dtype)
    (y,) = forward("UpSampling", [x], scale=2, sample_type="nearest")
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, x.repeat(2, 2).repeat(2, 3))
    check_gradient("UpSampling", [x.astype(np.float64)], scale=2, sample_type="nearest")
    check_gradient("UpSampling", [rng.standard_normal((1, 2, 2, 2)), rng.standard_normal((1, 3, 1, 1))],
                   scale=2, sample_type="nearest", num_args=2, multi_input_mode="concat")
