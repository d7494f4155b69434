"""BatchNorm: batch vs moving statistics, in-place moving averages, fix_gamma, axis, vs MXNet 1.9.1."""
import numpy as np
import pytest
from nn_check import check_fixture, check_gradient, fixture_cases, forward

from mxref.ops import registry

CASES = fixture_cases("BatchNorm")
OP = registry.get("BatchNorm")


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    """Outputs, gradients and updated moving_mean/moving_var equal MXNet's."""
    check_fixture("BatchNorm", CASES[name], is_train=not name.startswith("infer"), rtol=1e-4, atol=1e-5)


def _inputs(rng, dtype=np.float64):
    x = (rng.standard_normal((4, 3, 2, 2)) * 2 + 1).astype(dtype)
    return [x, rng.standard_normal(3).astype(dtype), rng.standard_normal(3).astype(dtype),
            np.zeros(3, dtype), np.ones(3, dtype)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_training_normalises_and_updates_moving_stats(rng, dtype):
    """Training output has zero mean / unit variance per channel; aux move by 1 - momentum."""
    ins = _inputs(rng, dtype)
    x = ins[0].astype(np.float64)
    out, mean, invstd = forward("BatchNorm", ins, is_train=True, momentum=0.8)
    assert out.dtype == dtype
    np.testing.assert_allclose(out.mean(axis=(0, 2, 3)), ins[2], atol=1e-5)  # beta; gamma fixed to 1
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(invstd, 1 / np.sqrt(x.var(axis=(0, 2, 3)) + 1e-3), rtol=1e-5)
    np.testing.assert_allclose(ins[3], 0.2 * x.mean(axis=(0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(ins[4], 0.8 + 0.2 * x.var(axis=(0, 2, 3)), rtol=1e-5)


def test_inference_uses_moving_stats_and_leaves_them(rng):
    """At inference the moving statistics normalise and are not changed."""
    ins = _inputs(rng)
    ins[3][:] = [0.5, -1, 2]
    ins[4][:] = [4, 1, 0.25]
    (out, _, _) = forward("BatchNorm", ins, is_train=False, fix_gamma=False)
    want = (ins[0] - ins[3].reshape(1, 3, 1, 1)) / np.sqrt(ins[4].reshape(1, 3, 1, 1) + 1e-3)
    np.testing.assert_allclose(out, want * ins[1].reshape(1, 3, 1, 1) + ins[2].reshape(1, 3, 1, 1))
    np.testing.assert_array_equal(ins[3], [0.5, -1, 2])


@pytest.mark.parametrize("kw", [{"fix_gamma": False}, {"fix_gamma": False, "use_global_stats": True},
                                {"fix_gamma": True}, {"fix_gamma": False, "axis": -1}])
def test_gradient(rng, kw):
    """Gradients of data, gamma and beta agree with central differences."""
    ins = _inputs(rng)
    if kw.get("axis") == -1:
        ins[0] = ins[0].transpose(0, 2, 3, 1).copy()
    check_gradient("BatchNorm", ins, wrt=[0, 1, 2], rtol=1e-5, atol=1e-6, **kw)


def test_shapes_and_outputs():
    """gamma/beta/moving stats are (C,) for the channel axis; mean/var are hidden by default."""
    p = OP.parse_params({"axis": -1})
    ins, outs = OP.infer_shape(p, [(2, 5, 7), None, None, None, None])
    assert ins[1:] == [(7,)] * 4 and outs == [(2, 5, 7), (7,), (7,)]
    assert OP.list_aux_states(p) == ["moving_mean", "moving_var"]
    assert OP.num_visible_outputs(p) == 1
    assert OP.num_visible_outputs(OP.parse_params({"output_mean_var": True})) == 3


def test_float16_data_keeps_float32_parameters():
    """MXNet's type rule: float16 data, float32 gamma/beta/moving statistics and mean/var
    outputs; the statistics and gradients are computed in float32 and agree with a float32 run."""
    import mxref as mx
    from mxref.base import MXNetError
    s = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn", fix_gamma=False)
    args, outs, aux = s.infer_type(data=np.float16)
    assert args == [np.float16, np.float32, np.float32] and aux == [np.float32, np.float32]
    assert outs == [np.float16]
    assert s.infer_type(data=np.float64)[0] == [np.float64] * 3
    with pytest.raises(MXNetError, match="gamma has dtype float16"):
        s.infer_type(data=np.float16, bn_gamma=np.float16)
    rng = np.random.RandomState(0)
    x = rng.normal(size=(6, 3, 2)).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, 3).astype(np.float32), rng.normal(size=3).astype(np.float32)
    head = rng.normal(size=x.shape).astype(np.float32)
    results = {}
    for dt in ("float32", "float16"):
        xs, ps = mx.nd.array(x, dtype=dt), [mx.nd.array(gamma), mx.nd.array(beta)]
        mean, var = mx.nd.zeros(3), mx.nd.ones(3)
        for a in [xs] + ps:
            a.attach_grad()
        with mx.autograd.record():
            y = mx.nd.BatchNorm(xs, ps[0], ps[1], mean, var, fix_gamma=False)
        y.backward(mx.nd.array(head, dtype=dt))
        assert y.dtype == np.dtype(dt) and xs.grad.dtype == np.dtype(dt)
        assert ps[0].grad.dtype == np.float32 and mean.dtype == np.float32
        results[dt] = [y.asnumpy(), xs.grad.asnumpy(), ps[0].grad.asnumpy(), ps[1].grad.asnumpy(),
                       mean.asnumpy()]
    for a, b in zip(results["float16"], results["float32"]):
        np.testing.assert_allclose(a.astype(np.float32), b, rtol=5e-3, atol=5e-3)
