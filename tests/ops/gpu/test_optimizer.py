"""GPU optimizer updates against their numpy references."""
import numpy as np
import pytest

from mxref.ops.gpu.harness import check_gpu_kernel

pytestmark = pytest.mark.timeout(120)
rng = np.random.default_rng(8)


@pytest.mark.parametrize("clip", [-1.0, 0.1])
def test_sgd_and_momentum(clip):
    for dtype in (np.float32, np.float64):
        w, g, m = (rng.standard_normal(301).astype(dtype) for _ in range(3))
        p = {"lr": 0.1, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": clip}
        check_gpu_kernel("sgd_update", [w, g], p)
        out = check_gpu_kernel("sgd_mom_update", [w, g, m], dict(p, momentum=0.9))
        assert not np.array_equal(out[3], m)        # the momentum state was updated on the device
