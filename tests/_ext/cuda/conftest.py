"""GPU tests run on the emulator unless ``MXREF_CUDA=pycuda`` names a real GPU."""
import pytest


@pytest.fixture(autouse=True, scope="module")
def gpu_backend():
    import mxref as mx
    from mxref import storage
    from mxref._ext.cuda import runtime
    with runtime.use_emulator_unless_gpu() as be:
        yield be
        mx.nd.waitall()
        storage.reset()     # no emulated block outlives the emulator in this process
