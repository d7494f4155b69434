"""Pooling: max/avg/sum, global, valid/full, count_include_pad, 1-D/3-D, vs MXNet 1.9.1 and numerics."""
import numpy as np
import pytest
from nn_check import check_fixture, check_gradient, fixture_cases, forward, grads

from mxref.base import MXNetError
from mxref.ops import registry

CASES = fixture_cases("Pooling")
OP = registry.get("Pooling")


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    """Output and data gradient equal MXNet's for every pooling type and convention."""
    check_fixture("Pooling", CASES[name])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_2x2_max_and_avg(rng, dtype):
    """2x2/stride-2 pooling equals a reshape-and-reduce, keeping the dtype."""
    x = rng.standard_normal((2, 3, 4, 6)).astype(dtype)
    blocks = x.reshape(2, 3, 2, 2, 3, 2)
    (m,) = forward("Pooling", [x], kernel=(2, 2), stride=(2, 2))
    (a,) = forward("Pooling", [x], kernel=(2, 2), stride=(2, 2), pool_type="avg")
    assert m.dtype == a.dtype == dtype
    np.testing.assert_array_equal(m, blocks.max(axis=(3, 5)))
    np.testing.assert_allclose(a, blocks.mean(axis=(3, 5)), rtol=1e-6)


@pytest.mark.parametrize("kw", [
    {"kernel": (3, 2), "stride": (2, 1), "pad": (1, 1), "pool_type": "max"},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg", "pooling_convention": "full"},
    {"kernel": (2, 2), "pool_type": "avg", "pad": (1, 1), "count_include_pad": False},
    {"kernel": (2,), "stride": (2,), "pool_type": "sum"},
    {"kernel": (1, 1), "global_pool": True, "pool_type": "avg"},
])
def test_gradient(rng, kw):
    """Gradients agree with central differences (max away from ties)."""
    shape = (2, 2, 7) if len(kw["kernel"]) == 1 else (2, 2, 5, 4)
    x = rng.permutation(np.prod(shape)).reshape(shape) * 0.1  # distinct values: no max ties
    check_gradient("Pooling", [x], **kw)


def test_output_shapes():
    """'valid' floors and 'full' rounds up the output size; global pooling gives 1x1."""
    shape = [(1, 1, 6, 6)]
    valid = OP.parse_params({"kernel": (3, 3), "stride": (2, 2)})
    full = OP.parse_params({"kernel": (3, 3), "stride": (2, 2), "pooling_convention": "full"})
    glob = OP.parse_params({"kernel": (3, 3), "global_pool": True})
    assert OP.infer_shape(valid, shape)[1] == [(1, 1, 2, 2)]
    assert OP.infer_shape(full, shape)[1] == [(1, 1, 3, 3)]
    assert OP.infer_shape(glob, shape)[1] == [(1, 1, 1, 1)]
    with pytest.raises(MXNetError, match="Pooling"):
        OP.infer_shape(valid, [(1, 1, 6)])


@pytest.mark.parametrize("layout,shape", [("NWC", (2, 9, 3)), ("NHWC", (2, 7, 6, 3)),
                                          ("NDHWC", (1, 5, 4, 6, 2))])
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_channel_last_layouts_equal_channel_first(layout, shape, pool_type):
    """NWC/NHWC/NDHWC pool the same windows as the channel-first layout (outputs, shapes and
    gradients), with the channel axis last; global pooling too."""
    rng = np.random.default_rng(4)
    nd = len(shape) - 2
    x = rng.standard_normal(shape)
    first = np.moveaxis(x, -1, 1)
    for kw in ({"kernel": (3,) * nd, "stride": (2,) * nd, "pad": (1,) * nd}, {"global_pool": True,
                                                                               "kernel": (1,) * nd}):
        out = forward("Pooling", [x], pool_type=pool_type, layout=layout, **kw)[0]
        want = forward("Pooling", [first], pool_type=pool_type, **kw)[0]
        np.testing.assert_allclose(out, np.moveaxis(want, 1, -1), rtol=1e-12)
        assert registry.get("Pooling").infer_shape(
            registry.get("Pooling").parse_params(dict(kw, layout=layout, pool_type=pool_type)),
            [shape])[1] == [out.shape]
        og = rng.standard_normal(out.shape)
        dx = grads("Pooling", [x], [og], pool_type=pool_type, layout=layout, **kw)[0]
        dx_first = grads("Pooling", [first], [np.moveaxis(og, -1, 1)], pool_type=pool_type, **kw)[0]
        np.testing.assert_allclose(dx, np.moveaxis(dx_first, 1, -1), rtol=1e-12)
def test_same_convention_1d():
    """'same': ceil(x / stride) outputs, the last windows stopping at the input's end; 1-D and no
    pad only (MXNet's rules; a zero pad of any length is accepted)."""
    x = np.arange(10, dtype=np.float64).reshape(1, 1, 10)
    (y,) = forward("Pooling", [x], kernel=(3,), stride=(2,), pooling_convention="same")
    np.testing.assert_array_equal(y, [[[2, 4, 6, 8, 9]]])
    (a,) = forward("Pooling", [x], kernel=(3,), stride=(2,), pad=(0, 0, 0), pool_type="avg",
                   pooling_convention="same")
    np.testing.assert_allclose(a, [[[1, 3, 5, 7, 8.5]]])
    check_gradient("Pooling", [x + np.random.default_rng(0).uniform(0, 0.1, x.shape)], kernel=(3,),
                   stride=(2,), pooling_convention="same")
    with pytest.raises(MXNetError, match="disables the use of pad"):
        registry.get("Pooling").parse_params({"kernel": (2,), "pad": (2,), "pooling_convention": "same"})
    with pytest.raises(MXNetError, match="1-D"):
        forward("Pooling", [np.ones((1, 1, 4, 4))], kernel=(2, 2), pooling_convention="same")
