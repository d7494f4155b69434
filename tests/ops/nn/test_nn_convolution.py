"""Convolution: 1-D/2-D/3-D forward and gradients vs MXNet 1.9.1, numeric gradients, shape rules."""
import numpy as np
import pytest
from nn_check import check_fixture, check_gradient, fixture_cases, forward

import mxref as mx
from mxref.base import MXNetError
from mxref.ops import registry

CASES = fixture_cases("Convolution")
OP = registry.get("Convolution")


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    """Output and data/weight/bias gradients equal MXNet's (stride, pad, dilate, groups, 1-D, 3-D)."""
    check_fixture("Convolution", CASES[name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_direct_sum(rng, dtype):
    """The im2col GEMM equals the defining sum over channels and kernel offsets."""
    x = rng.standard_normal((2, 3, 6, 5)).astype(dtype)
    w = rng.standard_normal((4, 3, 3, 2)).astype(dtype)
    b = rng.standard_normal(4).astype(dtype)
    (y,) = forward("Convolution", [x, w, b], kernel=(3, 2), num_filter=4, stride=(2, 1))
    assert y.dtype == dtype and y.shape == (2, 4, 2, 4)
    ref = np.zeros(y.shape)
    for i in range(2):
        for j in range(4):
            patch = x[:, :, 2 * i:2 * i + 3, j:j + 2].astype(np.float64)
            ref[:, :, i, j] = np.einsum("nckl,fckl->nf", patch, w) + b
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [
    {"kernel": (3, 3), "num_filter": 2, "pad": (1, 1), "stride": (2, 2)},
    {"kernel": (2, 2), "num_filter": 4, "num_group": 2, "dilate": (2, 1)},
    {"kernel": (3,), "num_filter": 2, "no_bias": True},
    {"kernel": (2, 2, 2), "num_filter": 2, "pad": (1, 0, 1)},
])
def test_gradient(rng, kw):
    """Gradients of data, weight and bias agree with central differences."""
    nd = len(kw["kernel"])
    x = rng.standard_normal((2, 4) + (5, 4, 3)[:nd])
    w = rng.standard_normal((kw["num_filter"], 4 // kw.get("num_group", 1)) + kw["kernel"])
    ins = [x, w] if kw.get("no_bias") else [x, w, rng.standard_normal(kw["num_filter"])]
    check_gradient("Convolution", ins, rtol=1e-5, atol=1e-6, **kw)


def test_infer_shape():
    """Weight (num_filter, C/num_group, *kernel) and the output size come from the data shape."""
    p = OP.parse_params({"kernel": (3, 3), "num_filter": 8, "num_group": 2, "pad": (1, 1),
                         "stride": (2, 2)})
    ins, outs = OP.infer_shape(p, [(4, 6, 9, 8), None, None])
    assert ins[1:] == [(8, 3, 3, 3), (8,)] and outs == [(4, 8, 5, 4)]
    with pytest.raises(MXNetError, match="Convolution.*weight"):
        OP.infer_shape(p, [(4, 6, 9, 8), (8, 6, 3, 3), None])
    with pytest.raises(MXNetError, match="Convolution.*4-D"):
        OP.infer_shape(p, [(4, 6, 9), None, None])
    with pytest.raises(MXNetError, match="Convolution.*kernel"):
        OP.infer_shape(OP.parse_params({"kernel": (3, 3), "num_filter": 2}), [(4, 6, 2, 5), None, None])


def test_known_output_fills_unknown_data_batch_and_stride1_size():
    """As MXNet: an output shape known from elsewhere fills the data's unknown batch and, where the
    stride is 1, its unknown spatial sizes (a ConvLSTM's zero begin state of shape (0, C, H, W))."""
    state = mx.sym.zeros((0, 2, 0, 4))
    h2h = mx.sym.Convolution(state, num_filter=3, kernel=(3, 3), pad=(1, 1), name="h2h")
    i2h = mx.sym.Convolution(mx.sym.Variable("x"), num_filter=3, kernel=(3, 3), pad=(1, 1), name="i2h")
    out = i2h + h2h
    _, outs, _ = out.infer_shape(x=(5, 1, 6, 4))
    assert outs == [(5, 3, 6, 4)]
    res = out.eval(x=mx.nd.ones((5, 1, 6, 4)), i2h_weight=mx.nd.ones((3, 1, 3, 3)),
                   i2h_bias=mx.nd.zeros(3), h2h_weight=mx.nd.ones((3, 2, 3, 3)), h2h_bias=mx.nd.zeros(3))[0]
    assert res.shape == (5, 3, 6, 4) and res.asnumpy()[0, 0, 2, 2] == 9
@pytest.mark.parametrize("num_group,shape", [(1, (3, 4, 5, 6)), (2, (2, 4, 7)), (2, (1, 4, 2, 3, 2))])
def test_pointwise_convolution(num_group, shape):
    """A 1-kernel, stride-1, unpadded convolution (batched GEMMs on the data, no columns) is
    out[n, f] = sum_c W[f, c] data[n, c] + bias[f] per group; gradients by central differences."""
    rng = np.random.default_rng(5)
    nd = len(shape) - 2
    x = rng.standard_normal(shape)
    w = rng.standard_normal((6, shape[1] // num_group) + (1,) * nd)
    b = rng.standard_normal(6)
    kw = {"kernel": (1,) * nd, "num_filter": 6, "num_group": num_group}
    out = forward("Convolution", [x, w, b], **kw)[0]
    cg, fg = shape[1] // num_group, 6 // num_group
    want = np.concatenate([np.einsum("fc,nc...->nf...", w[i * fg:(i + 1) * fg].reshape(fg, cg),
                                     x[:, i * cg:(i + 1) * cg]) for i in range(num_group)], axis=1)
    np.testing.assert_allclose(out, want + b.reshape((1, 6) + (1,) * nd), rtol=1e-12)
    check_gradient("Convolution", [x, w, b], rtol=1e-6, atol=1e-8, **kw)
