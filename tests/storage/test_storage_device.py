"""Raw device allocators: aligned host buffers, a byte cap that simulates out-of-memory, mem_info."""
import numpy as np
import pytest

from mxref.base import MXNetError
from mxref.storage.device import ALIGNMENT, CPUDevice, OutOfMemory, physical_memory


def test_cpu_blocks_are_aligned_and_exact():
    """Blocks are 64-byte aligned uint8 arrays of exactly the requested size."""
    dev = CPUDevice()
    for n in (1, 63, 64, 4096, 100003):
        block = dev.alloc(n)
        assert block.ctypes.data % ALIGNMENT == 0 and block.nbytes == n and block.dtype == np.uint8
        dev.free(block, n)
    assert (dev.bytes_held, dev.num_device_alloc, dev.num_device_free) == (0, 5, 5)


def test_limit_simulates_out_of_memory():
    """With a cap, a request beyond it raises OutOfMemory and holds nothing; freeing makes room."""
    dev = CPUDevice(limit=10000)
    a = dev.alloc(6000)
    with pytest.raises(OutOfMemory, match="cpu limit 10000"):
        dev.alloc(6000)
    assert dev.bytes_held == 6000 and dev.mem_info() == (4000, 10000)
    dev.free(a, 6000)
    assert dev.alloc(10000).nbytes == 10000


def test_operating_system_refusal_is_out_of_memory():
    """An allocation the system refuses (numpy's MemoryError) becomes OutOfMemory, leaving no trace."""
    dev = CPUDevice()
    with pytest.raises(OutOfMemory, match="refused"):
        dev.alloc(1 << 58)
    assert dev.bytes_held == 0


def test_mem_info_without_limit_counts_physical_memory():
    """Without a cap the total is the machine's physical memory."""
    dev = CPUDevice()
    assert dev.mem_info()[1] == physical_memory() > 0
    with pytest.raises(MXNetError, match="limit must be >= 0"):
        CPUDevice(limit=-1)
