"""Embedding: row lookup with clipped indices, scatter-add weight gradient, vs MXNet 1.9.1."""
import numpy as np
import pytest
from nn_check import check_fixture, check_gradient, fixture_cases, forward

from mxref.ops import registry

OP = registry.get("Embedding")


def test_matches_mxnet():
    """Output and weight gradient (repeated and out-of-range indices) equal MXNet's."""
    check_fixture("Embedding", fixture_cases("Embedding")["basic"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward(rng, dtype):
    """out[..., :] = weight[index]; the output has the weight's dtype and data.shape + (dim,)."""
    w = rng.standard_normal((6, 3)).astype(dtype)
    idx = np.array([[5, 0], [2, 2]], np.float32)
    (out,) = forward("Embedding", [idx, w], input_dim=6, output_dim=3, dtype=np.dtype(dtype).name)
    assert out.dtype == dtype and out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out, w[idx.astype(int)])


def test_gradient(rng):
    """The weight gradient agrees with central differences; indices get None."""
    idx = np.array([1, 3, 1, 0], np.float64)
    check_gradient("Embedding", [idx, rng.standard_normal((4, 2))], wrt=[1], input_dim=4, output_dim=2)


def test_shapes():
    """The weight shape comes from input_dim/output_dim."""
    p = OP.parse_params({"input_dim": 10, "output_dim": 4})
    assert OP.infer_shape(p, [(2, 7), None]) == ([(2, 7), (10, 4)], [(2, 7, 4)])
