"""contrib.SyncBatchNorm on one device: BatchNorm_v1 with a key; ndev > 1 is refused."""
import numpy as np
import pytest
from nn_check import check_gradient, forward

import mxref as mx
from mxref.base import MXNetError


def test_one_device_is_batch_norm_v1(rng):
    x = rng.standard_normal((4, 3, 5))
    ins = [x, np.array([0.5, 1.0, 2.0]), np.array([0.0, 0.1, -0.2]), np.zeros(3), np.ones(3)]
    got = forward("_contrib_SyncBatchNorm", ins, is_train=True, fix_gamma=False, key="k")
    want = forward("BatchNorm_v1", ins, is_train=True, fix_gamma=False)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(got[2], x.var(axis=(0, 2)), rtol=1e-10)     # var, not 1/std
    check_gradient("_contrib_SyncBatchNorm", ins, wrt=[0, 1, 2], fix_gamma=False, key="k")


def test_namespace_names_and_ndev():
    s = mx.sym.contrib.SyncBatchNorm(mx.sym.var("d"), name="bn", key="k")
    assert s.list_arguments() == ["d", "bn_gamma", "bn_beta"]
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    y = mx.nd.contrib.SyncBatchNorm(mx.nd.ones((2, 3)), mx.nd.ones(3), mx.nd.zeros(3), mx.nd.zeros(3),
                                    mx.nd.ones(3), key="k")
    assert y.shape == (2, 3)
    with pytest.raises(MXNetError, match="ndev"):
        mx.sym.contrib.SyncBatchNorm(mx.sym.var("d"), key="k", ndev=2)
