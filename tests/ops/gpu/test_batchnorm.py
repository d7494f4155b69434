"""GPU BatchNorm forward (batch and moving statistics, moving-average update) and backward."""
import numpy as np
import pytest

from mxref.ops.gpu.harness import check_gpu_kernel

pytestmark = pytest.mark.timeout(120)
rng = np.random.default_rng(9)


@pytest.mark.parametrize("shape,axis", [((4, 3, 5, 5), 1), ((6, 7), 1), ((2, 3, 4), -1), ((1, 2, 1, 1), 1)])
@pytest.mark.parametrize("is_train", [True, False])
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batchnorm_forward_backward(shape, axis, is_train, fix_gamma):
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    c = shape[axis]
    gamma, beta = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    mmean, mvar = rng.standard_normal(c).astype(np.float32), (rng.random(c) + 0.5).astype(np.float32)
    p = {"axis": axis, "fix_gamma": fix_gamma}
    got = check_gpu_kernel("BatchNorm", [x, gamma, beta, mmean, mvar], p, is_train=is_train)
    y, mean, invstd = got[:3]
    if is_train:   # the moving statistics (inputs 3, 4) were updated in place, as the reference
        assert not np.allclose(got[6], mmean)
    g = rng.standard_normal(shape).astype(np.float32)
    check_gpu_kernel("_backward_BatchNorm", [g, x, gamma, mean, invstd], p, is_train=is_train)
