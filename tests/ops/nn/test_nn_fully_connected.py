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


@pytest.mark.parametrize("req", [("write", "write", "write"), ("add", "write", "add"),
                                 ("null", "write", "write")])
def test_backward_side_by_side_equals_one_after_the_other(rng, monkeypatch, req):
    """With two operator threads and big GEMMs, dx and dW run side by side (each whole) and give
    what the sequential split GEMMs give (the same bits at these sizes); db is summed straight
    into its gradient; req 'add' and 'null' are honoured."""
    from mxref.ops import parallel  # noqa: PLC0415
    n, h, k = 6, 5, 7
    og = rng.standard_normal((n, h)).astype(np.float32)
    x = rng.standard_normal((n, k)).astype(np.float32)
    w = rng.standard_normal((h, k)).astype(np.float32)
    p = OP.parse_params({"num_hidden": h})
    bwd = registry.get("_backward_FullyConnected").fcompute
    start = [rng.standard_normal(s).astype(np.float32) for s in ((n, k), (h, k), (h,))]
    results = {}
    for side_by_side in (False, True):
        monkeypatch.setattr(parallel, "SPLIT_GEMMS", True)
        monkeypatch.setattr(parallel, "NUM_THREADS", 2)
        monkeypatch.setattr(parallel, "MIN_GEMM_PER_THREAD", 1 if side_by_side else 1 << 30)
        calls = []
        monkeypatch.setattr("mxref.ops.nn.fully_connected.run_concurrently",
                            lambda *c, calls=calls: (calls.append(len(c)), parallel.run_concurrently(*c)))
        outs = [s.copy() for s in start]
        bwd(None, p, [og, x, w], outs, list(req))
        assert calls == ([2] if side_by_side and req[0] != "null" else [])
        results[side_by_side] = outs
    for seq, par in zip(results[False], results[True]):
        np.testing.assert_array_equal(seq, par)
    expect_dx = og @ w + (start[0] if req[0] == "add" else 0)
    expect_db = og.sum(0) + (start[2] if req[2] == "add" else 0)
    if req[0] != "null":
        np.testing.assert_allclose(results[True][0], expect_dx, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(results[True][0], start[0])
    np.testing.assert_allclose(results[True][1], og.T @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(results[True][2], expect_db, rtol=1e-5, atol=1e-5)
