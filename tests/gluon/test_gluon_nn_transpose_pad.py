"""Conv1DTranspose, Conv3DTranspose, GlobalAvgPool3D, GlobalMaxPool3D and ReflectionPad2D: numpy
references, MXNet 1.9.1 numbers and parameter names, imperative and hybridized, and symbol forms."""
import os

import numpy as np
import pytest

import mxref as mx
from mxref import autograd
from mxref.gluon import nn

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gluon",
                       "layers_losses_cells_mxnet191.npz")


def case(name):
    with np.load(FIXTURE) as f:
        return {k.split("/", 1)[1]: f[k] for k in f.files if k.startswith(name + "/")}


def fill(block):
    """The parameter values the fixture used: uniform(-.5, .5) from seed 1, in sorted-name order."""
    rng = np.random.RandomState(1)
    names = sorted(block.collect_params().keys())
    for n in names:
        p = block.collect_params()[n]
        p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, p.shape)))
    return names


BUILD = {
    "conv1dt": lambda: nn.Conv1DTranspose(3, 3, strides=2, padding=1, output_padding=1, in_channels=2),
    "conv3dt": lambda: nn.Conv3DTranspose(2, (2, 3, 2), strides=(2, 1, 1), padding=(0, 1, 0),
                                          activation="tanh"),
    "conv3dt_group": lambda: nn.Conv3DTranspose(4, 2, groups=2, use_bias=False, in_channels=2),
    "reflect": lambda: nn.ReflectionPad2D(2),
    "reflect8": lambda: nn.ReflectionPad2D((0, 0, 0, 0, 1, 2, 3, 1)),
    "gavg3d": lambda: nn.GlobalAvgPool3D(),
    "gmax3d": lambda: nn.GlobalMaxPool3D(),
}


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("name", sorted(BUILD))
def test_layers_match_mxnet(name, hybridize):
    """Outputs, input gradients and parameter names equal MXNet 1.9.1's, hybridized or not."""
    c = case(name)
    with mx.name.NameManager():
        block = BUILD[name]()
    block.initialize()
    x = mx.nd.array(c["in0"])
    block(x)
    assert fill(block) == [n for n in c["names"] if n]
    if hybridize:
        block.hybridize()
    x.attach_grad()
    with autograd.record():
        y = block(x)
    y.backward(mx.nd.array(c["ograd"]))
    np.testing.assert_allclose(y.asnumpy(), c["out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), c["grad"], rtol=1e-5, atol=1e-6)


def test_conv_transpose_is_deconvolution():
    """Conv1D/3DTranspose call Deconvolution with adj = output_padding; weight (in, out/groups, *k)."""
    x = mx.nd.random.uniform(-1, 1, shape=(2, 4, 5))
    blk = nn.Conv1DTranspose(6, 3, strides=2, padding=1, output_padding=1, groups=2)
    blk.initialize()
    y = blk(x)
    assert blk.weight.shape == (4, 3, 3) and y.shape == (2, 6, (5 - 1) * 2 - 2 + 3 + 1)
    want = mx.nd.Deconvolution(x, blk.weight.data(), blk.bias.data(), kernel=(3,), stride=(2,), pad=(1,),
                               adj=(1,), num_filter=6, num_group=2, no_bias=False)
    np.testing.assert_allclose(y.asnumpy(), want.asnumpy(), rtol=1e-6)
    blk3 = nn.Conv3DTranspose(2, 3, strides=2, output_padding=(1, 0, 1))
    blk3.initialize()
    assert blk3(mx.nd.ones((1, 3, 2, 2, 2))).shape == (1, 2, 6, 5, 6)
    assert blk3.weight.shape == (3, 2, 3, 3, 3) and blk3.outpad == (1, 0, 1)


def test_conv_transpose_arguments_checked():
    """Layouts and tuple lengths are asserted, as MXNet does."""
    with pytest.raises(AssertionError, match="layout"):
        nn.Conv1DTranspose(2, 3, layout="NWC")
    with pytest.raises(AssertionError, match="3 values"):
        nn.Conv3DTranspose(2, (3, 3))
    with pytest.raises(AssertionError, match="1 values"):
        nn.Conv1DTranspose(2, 3, output_padding=(1, 1))


def test_global_pool_3d_and_reflection_pad_by_numpy():
    """Global pooling keeps (N, C, 1, 1, 1); ReflectionPad2D is numpy's 'reflect' pad on H and W."""
    x = np.random.RandomState(0).normal(size=(2, 3, 2, 3, 4)).astype("f4")
    for blk, ref in ((nn.GlobalAvgPool3D(), np.mean), (nn.GlobalMaxPool3D(), np.max)):
        out = blk(mx.nd.array(x)).asnumpy()
        np.testing.assert_allclose(out, ref(x, axis=(2, 3, 4), keepdims=True), rtol=1e-6)
    img = x[:, :, 0]
    pad = nn.ReflectionPad2D(2)
    pad.hybridize()
    np.testing.assert_array_equal(pad(mx.nd.array(img)).asnumpy(),
                                  np.pad(img, ((0, 0), (0, 0), (2, 2), (2, 2)), mode="reflect"))
    with pytest.raises(AssertionError):
        nn.ReflectionPad2D((1, 2))


def test_symbol_forms_infer_shapes():
    """Each layer applied to a Symbol infers MXNet's output shape."""
    data = mx.sym.var("data")
    cases = [(nn.Conv1DTranspose(4, 3, strides=2, in_channels=2), (1, 2, 5), (1, 4, 11)),
             (nn.Conv3DTranspose(4, 2, in_channels=3), (1, 3, 2, 3, 4), (1, 4, 3, 4, 5)),
             (nn.GlobalMaxPool3D(), (2, 3, 4, 5, 6), (2, 3, 1, 1, 1)),
             (nn.ReflectionPad2D(1), (2, 3, 4, 5), (2, 3, 6, 7))]
    for blk, shape, want in cases:
        blk.initialize()
        _, outs, _ = blk(data).infer_shape(data=shape)
        assert outs == [want], type(blk).__name__
