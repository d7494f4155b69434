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


@pytest.mark.parametrize("name,n_states", [("multi_sgd_update", 0), ("multi_sgd_mom_update", 1)])
def test_fused_sgd_runs_each_weight_on_the_device(name, n_states):
    """The fused ops (SGD's aggregated path) on the GPU: three weights, each with its own lr/wd."""
    for dtype in (np.float32, np.float64):
        arrays = [rng.standard_normal(n).astype(dtype) for n in (301, 7, 64) for _ in range(2 + n_states)]
        p = {"num_weights": 3, "lrs": (0.1, 0.2, 0.05), "wds": (0.01, 0.0, 0.1), "rescale_grad": 0.5,
             "clip_gradient": 0.3, **({"momentum": 0.9} if n_states else {})}
        out = check_gpu_kernel(name, arrays, p)
        if n_states:
            assert not np.array_equal(out[3 + 2], arrays[2])     # weight 0's momentum, updated
