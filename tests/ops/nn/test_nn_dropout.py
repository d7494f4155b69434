"""Dropout: identity at inference, scaled Bernoulli mask in training, mask reused by backward."""
import numpy as np
import pytest
from nn_check import forward, grads

from mxref.base import MXNetError
from mxref.ops import registry


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inference_is_identity(rng, dtype):
    """Without training (mode='training') the output equals the input and the mask is ones."""
    x = rng.standard_normal((4, 5)).astype(dtype)
    out, mask = forward("Dropout", [x], is_train=False, p=0.5)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(mask, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_training_drops_and_rescales(dtype):
    """In training about p of the elements are zero and the rest are scaled by 1/(1-p)."""
    x = np.ones((200, 100), dtype)
    out, mask = forward("Dropout", [x], is_train=True, p=0.3, seed=7)
    assert out.dtype == dtype
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    np.testing.assert_array_equal(out, x * mask)


def test_mode_always_and_axes():
    """mode='always' drops at inference too; axes share one mask value along those axes."""
    x = np.ones((50, 3, 40))
    out, _ = forward("Dropout", [x], is_train=False, mode="always", axes=(1,), p=0.5, seed=3)
    assert (out != 0).any() and (out == 0).any()
    assert (out == out[:, :1, :]).all()


def test_backward_uses_the_forward_mask():
    """dx = ograd * mask, with the very mask the forward drew (same seed, same graph)."""
    x = np.arange(1.0, 41.0).reshape(5, 8)
    g = np.full_like(x, 2.0)
    out, mask = forward("Dropout", [x], is_train=True, p=0.5, seed=11)
    (dx,) = grads("Dropout", [x], [g], is_train=True, p=0.5, seed=11)
    np.testing.assert_array_equal(dx, g * mask)
    assert registry.get("Dropout").resources == ("random",)


def test_bad_p():
    """p outside [0, 1] is rejected."""
    for p in (1.5, -0.1):
        with pytest.raises(MXNetError, match="Dropout.*p"):
            registry.get("Dropout").parse_params({"p": p})


def test_p_one_drops_everything_into_nan():
    """p = 1 keeps nothing and scales by 1/0, so the output is NaN, as MXNet's."""
    out, mask = forward("Dropout", [np.ones((3, 4), np.float32)], is_train=True, p=1.0)
    assert np.isnan(out).all() and np.isnan(mask).all()
