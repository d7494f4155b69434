"""BatchNorm's C loops (``mxref/_ext/norm_kernels.pyx``, the 'cpu' kernels) against the numpy
reference: every axis, gamma choice, statistics source, request and dtype; the moving statistics
they update in place too."""
import itertools

import numpy as np
import pytest

from mxref.op_check import check_kernels
from mxref.ops.nn import batch_norm

needs_ext = pytest.mark.skipif(batch_norm.C is None, reason="mxref._ext.norm_kernels not built or disabled")


def _case(rng, shape, axis, dtype):
    x = (3 * rng.standard_normal(shape) + 1).astype(dtype)
    c = shape[axis]
    gamma, beta, mmean = (rng.standard_normal(c).astype(dtype) for _ in range(3))
    return [x, gamma, beta, mmean, rng.uniform(0.5, 2, c).astype(dtype)]


@needs_ext
@pytest.mark.parametrize("shape,axis", [((4, 3, 5, 6), 1), ((4, 5), 1), ((2, 3, 4), -1), ((6,), 0),
                                        ((2, 3, 4, 5), 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_c_equals_numpy(shape, axis, dtype):
    rng = np.random.default_rng(1)
    inputs = _case(rng, shape, axis, dtype)
    for fix_gamma, global_stats, train in itertools.product((True, False), repeat=3):
        p = {"axis": axis, "fix_gamma": fix_gamma, "use_global_stats": global_stats, "eps": 1e-3}
        ref = check_kernels("BatchNorm", inputs, p, is_train=train)["reference"]
        g = rng.standard_normal(shape).astype(dtype)
        back = [g, inputs[0], inputs[1], ref[1], ref[2]]
        check_kernels("_backward_BatchNorm", back, p, is_train=train)
        check_kernels("_backward_BatchNorm", back, p, is_train=train, req=["add", "write", "null"])
        check_kernels("_backward_BatchNorm", back, p, is_train=train, req=["null", "write", "write"])


@needs_ext
def test_batch_norm_c_declines_float16():
    """float16 data (with float32 parameters, MXNet's type rule) stays with the reference."""
    inputs = _case(np.random.default_rng(2), (2, 3, 4), 1, "float32")
    inputs[0] = inputs[0].astype("float16")
    check_kernels("BatchNorm", inputs, {}, expect_fast=False)
