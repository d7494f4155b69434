"""GPU tests run on the emulator unless ``MXREF_CUDA=pycuda`` names a real GPU."""
import pytest

from mxref.ops.gpu.harness import gpu_test_backend


@pytest.fixture(autouse=True, scope="module")
def gpu_backend():
    with gpu_test_backend() as be:
        yield be
