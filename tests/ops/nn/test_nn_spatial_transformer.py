"""BilinearSampler, GridGenerator, SpatialTransformer: loop references, MXNet's examples, gradients."""
import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError


def sample_ref(data, grid):
    N, C, H, W = data.shape
    out = np.zeros((N, C) + grid.shape[2:])
    for n in range(N):
        for i in range(grid.shape[2]):
            for j in range(grid.shape[3]):
                x = (grid[n, 0, i, j] + 1) * (W - 1) / 2
                y = (grid[n, 1, i, j] + 1) * (H - 1) / 2
                x0, y0 = int(np.floor(x)), int(np.floor(y))
                for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
                    for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                        if 0 <= yy < H and 0 <= xx < W:
                            out[n, :, i, j] += wy * wx * data[n, :, yy, xx]
    return out


DATA = np.array([[[[1, 4, 3, 6], [1, 8, 8, 9], [0, 4, 1, 5], [1, 0, 1, 3]]]], np.float32)


def test_docstring_examples():
    """MXNet's two documented examples: zoom out by 2 (affine) and shift by one pixel (warp)."""
    theta = mx.nd.array([[2, 0, 0, 0, 2, 0]])
    grid = mx.nd.GridGenerator(theta, transform_type="affine", target_shape=(4, 4))
    out = mx.nd.BilinearSampler(mx.nd.array(DATA), grid).asnumpy()
    np.testing.assert_allclose(out[0, 0], [[0, 0, 0, 0], [0, 3.5, 6.5, 0], [0, 1.25, 2.5, 0], [0, 0, 0, 0]])
    flow = np.zeros((1, 2, 4, 4), np.float32)
    flow[:, 0] = 1
    grid = mx.nd.GridGenerator(mx.nd.array(flow), transform_type="warp")
    out = mx.nd.BilinearSampler(mx.nd.array(DATA), grid).asnumpy()
    np.testing.assert_allclose(out[0, 0], [[4, 3, 6, 0], [8, 8, 9, 0], [4, 1, 5, 0], [0, 1, 3, 0]])


def test_sampler_forward_and_gradient(rng):
    """Zero padding outside; data and grid gradients agree with central differences."""
    data = rng.standard_normal((2, 3, 5, 6))
    grid = rng.uniform(-1.2, 1.2, (2, 2, 4, 3))
    out, _ = forward("BilinearSampler", [data, grid])
    np.testing.assert_allclose(out, sample_ref(data, grid), rtol=1e-12, atol=1e-12)
    check_gradient("BilinearSampler", [data, grid], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kind", ["affine", "warp"])
def test_grid_generator(rng, kind):
    """Affine: theta @ (x, y, 1) over the normalised target grid; warp: (flow + pixel) / half-size - 1."""
    if kind == "affine":
        theta = rng.standard_normal((2, 6))
        (g, dst) = forward("GridGenerator", [theta], transform_type="affine", target_shape=(3, 4))
        xs, ys = np.meshgrid(np.linspace(-1, 1, 4), np.linspace(-1, 1, 3))
        want = np.einsum("nij,jhw->nihw", theta.reshape(2, 2, 3), np.stack([xs, ys, np.ones_like(xs)]))
        np.testing.assert_allclose(g, want, atol=1e-12)
        check_gradient("GridGenerator", [theta], transform_type="affine", target_shape=(3, 4))
    else:
        flow = rng.standard_normal((2, 2, 3, 4))
        (g, _) = forward("GridGenerator", [flow], transform_type="warp")
        xs, ys = np.meshgrid(np.arange(4), np.arange(3))
        np.testing.assert_allclose(g[:, 0], (flow[:, 0] + xs) / 1.5 - 1)
        np.testing.assert_allclose(g[:, 1], (flow[:, 1] + ys) / 1.0 - 1)
        check_gradient("GridGenerator", [flow], transform_type="warp")


def test_spatial_transformer(rng):
    """Equals GridGenerator(affine) + BilinearSampler; data and loc gradients by central differences."""
    data = rng.standard_normal((2, 3, 6, 5))
    # NOTE: no sample may land exactly on the image border, where the sampler has a kink.
    loc = np.array([[0.9, 0.2, 0.13, -0.3, 0.8, 0.07], [0.7, -0.1, -0.17, 0.1, 0.6, 0.21]])
    out = forward("SpatialTransformer", [data, loc], target_shape=(4, 3), transform_type="affine",
                  sampler_type="bilinear")[0]
    grid = forward("GridGenerator", [loc], transform_type="affine", target_shape=(4, 3))[0]
    np.testing.assert_allclose(out, sample_ref(data, grid), rtol=1e-12, atol=1e-12)
    check_gradient("SpatialTransformer", [data, loc], rtol=1e-4, atol=1e-6, target_shape=(4, 3),
                   transform_type="affine", sampler_type="bilinear")


def test_shapes_and_errors():
    """Output shapes from the symbols; a one-channel grid and a missing target_shape are errors."""
    s = mx.sym.BilinearSampler(mx.sym.var("d"), mx.sym.var("g"))
    assert s.infer_shape(d=(2, 3, 8, 8), g=(2, 2, 4, 5))[1] == [(2, 3, 4, 5)]
    st = mx.sym.SpatialTransformer(mx.sym.var("d"), mx.sym.var("l"), target_shape=(3, 2),
                                   transform_type="affine", sampler_type="bilinear")
    assert st.infer_shape(d=(2, 3, 8, 8)) == ([(2, 3, 8, 8), (2, 6)], [(2, 3, 3, 2)], [])
    with pytest.raises(MXNetError, match="grid"):
        s.infer_shape(d=(2, 3, 8, 8), g=(2, 1, 4, 5))
    with pytest.raises(MXNetError, match="target_shape"):
        mx.sym.GridGenerator(mx.sym.var("d"), transform_type="affine").infer_shape(d=(2, 6))
