"""FullyConnected: shapes inferred from data, forward in float32/float64, gradient vs numeric."""
import numpy as np
import pytest
from nn_check import check_gradient, forward

from mxref.base import MXNetError
from mxref.ops import registry

OP = registry.get("FullyConnected")


def test_infer_shape_fills_weight_and_bias():
    """Weight (num_hidden, prod(data.shape[1:])) and bias (num_hidden,) come from the data shape."""
    p = OP.parse_params({"num_hidden": 5})
    ins, outs = OP.infer_shape(p, [(4, 3, 2), None, None])
    assert ins == [(4, 3, 2), (5, 6), (5,)] and outs == [(4, 5)]
    p = OP.parse_params({"num_hidden": 5, "flatten": False, "no_bias": True})
    ins, outs = OP.infer_shape(p, [(4, 3, 2), None])
    assert ins == [(4, 3, 2), (5, 2)] and outs == [(4, 3, 5)]
    assert OP.list_arguments(p) == ["data", "weight"]


def test_infer_shape_rejects_wrong_weight():
    """A weight whose shape disagrees with the data raises MXNetError naming the op and argument."""
    p = OP.parse_params({"num_hidden": 5})
    with pytest.raises(MXNetError, match="FullyConnected.*weight"):
        OP.infer_shape(p, [(4, 6), (5, 7), None])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("flatten", [True, False])
def test_forward(rng, dtype, flatten):
    """out = x W^T + b, in both dtypes, with and without flattening."""
    x = rng.standard_normal((4, 3, 6)).astype(dtype)
    k = 18 if flatten else 6
    w = rng.standard_normal((5, k)).astype(dtype)
    b = rng.standard_normal(5).astype(dtype)
    (out,) = forward("FullyConnected", [x, w, b], num_hidden=5, flatten=flatten)
    xx = x.reshape(4, -1) if flatten else x
    assert out.dtype == dtype
    np.testing.assert_allclose(out, xx @ w.T + b, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("no_bias", [False, True])
@pytest.mark.parametrize("flatten", [True, False])
def test_gradient(rng, no_bias, flatten):
    """Symbolic gradient (one _backward_FullyConnected node) matches central differences."""
    x = rng.standard_normal((3, 2, 4))
    w = rng.standard_normal((3, 8 if flatten else 4))
    ins = [x, w] if no_bias else [x, w, rng.standard_normal(3)]
    check_gradient("FullyConnected", ins, num_hidden=3, no_bias=no_bias, flatten=flatten)


def test_known_output_gives_data_its_batch():
    """A known output fills the data's unknown batch dimension (MXNet does it too): a zero begin
    state of batch 0 feeding a layer whose output is added to a known array."""
    import mxref as mx
    out = mx.sym.FullyConnected(mx.sym.zeros((0, 4)), num_hidden=8, name="fc") + mx.sym.var("x")
    assert out.simple_bind(mx.cpu(), x=(3, 8)).forward()[0].shape == (3, 8)
    seq = mx.sym.FullyConnected(mx.sym.zeros((0, 0, 4)), num_hidden=8, flatten=False) + mx.sym.var("y")
    assert seq.infer_shape(y=(2, 5, 8))[1] == [(2, 5, 8)]
