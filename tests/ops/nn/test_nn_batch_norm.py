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
