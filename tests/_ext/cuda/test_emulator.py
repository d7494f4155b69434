"""The CUDA emulator: barriers, shared memory, atomics, shuffles, votes, and the bugs it catches."""
import pathlib

import numpy as np
import pytest

from mxref.base import MXNetError

PROBE = pathlib.Path(__file__).with_name("emu_probe.cu")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def rt():
    from mxref._ext.cuda import runtime
    if runtime.backend(required=False) is None or runtime.backend().name != "emulate":
        mp = pytest.MonkeyPatch()
        mp.setenv("MXREF_CUDA", "emulate")
        runtime.reset_backend()
        yield runtime
        mp.undo()
        runtime.reset_backend()
    else:
        yield runtime


@pytest.fixture(scope="module")
def f32(rt):
    return rt.SourceModule(PROBE, ["-Dreal_t=float"])


def dev(rt, host):
    host = np.ascontiguousarray(host)
    ptr, owner = rt.backend().alloc(0, max(host.nbytes, 1))
    arr = rt.DeviceBuffer(ptr, host.nbytes, 0, owner).view(host.shape, host.dtype)
    arr.set(host)
    return arr


def test_barrier_and_shared_memory(rt, f32):
    """Block-wise reversal through __shared__ memory needs every thread at the barrier."""
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = dev(rt, np.zeros(n, np.float32))
    f32.get_function("reverse_block")(dev(rt, x), y, n, grid=(4,), block=(256,))
    expect = np.concatenate([x, np.zeros(24, np.float32)]).reshape(4, 256)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(y.get(), expect[:n])


def test_atomics_across_blocks(rt, f32):
    keys = np.random.default_rng(0).integers(0, 7, size=5000).astype(np.int32)
    bins = dev(rt, np.zeros(7, np.int32))
    f32.get_function("histogram")(dev(rt, keys), bins, keys.size, grid=(5,), block=(128,))
    np.testing.assert_array_equal(bins.get(), np.bincount(keys, minlength=7))
    x = np.ones(777, np.float32)
    total = dev(rt, np.zeros(1, np.float32))
    f32.get_function("atomic_sum")(dev(rt, x), total, x.size, grid=(7,), block=(128,))
    assert total.get()[0] == 777


@pytest.mark.parametrize("opt", ["-Dreal_t=float", "-Dreal_t=double"])
def test_warp_shuffles(rt, opt):
    mod = rt.SourceModule(PROBE, [opt])
    dtype = np.float32 if "float" in opt else np.float64
    x = np.arange(1, 33, dtype=dtype)
    out = dev(rt, np.zeros(66, dtype))
    mod.get_function("warp_ops")(dev(rt, x), out, grid=(1,), block=(32,))
    got = out.get()
    assert got[0] == x.sum() and got[1] == x.sum()
    np.testing.assert_array_equal(got[2:34], np.cumsum(x))
    np.testing.assert_array_equal(got[34:66], np.full(32, x[5]))


def test_votes_with_a_partial_warp(rt, f32):
    """Two warps of 40 threads: the second has 8 lanes; ballot, all and any see only live lanes."""
    x = np.full(40, -1, np.float32)
    x[[0, 3, 31]] = 1
    x[32:40] = 1
    flags = dev(rt, np.zeros(2, np.uint32))
    out = dev(rt, np.zeros(4, np.int32))
    f32.get_function("votes")(dev(rt, x), flags, out, grid=(1,), block=(40,))
    assert list(flags.get()) == [(1 << 0) | (1 << 3) | (1 << 31), 0xFF]
    assert list(out.get()) == [0, 1, 1, 1]


def test_3d_grid_and_block_coordinates(rt, f32):
    grid, block = (2, 3, 2), (4, 2, 3)
    nthreads = np.prod(grid) * np.prod(block)
    out = dev(rt, np.zeros(4 * nthreads, np.int32))
    f32.get_function("coords")(out, grid=grid, block=block)
    got = out.get().reshape(-1, 4)
    i = 0
    for bz in range(2):
        for by in range(3):
            for bx in range(2):
                for tz in range(3):
                    for ty in range(2):
                        for tx in range(4):
                            assert list(got[i]) == [bx + 10 * by + 100 * bz, tx + 10 * ty + 100 * tz, 24, 12]
                            i += 1


def test_out_of_bounds_write_names_kernel_argument_and_thread(rt, f32):
    y = dev(rt, np.zeros(1000, np.float32))
    with pytest.raises(MXNetError, match=r"kernel write_past_end: out-of-bounds write 0 byte\(s\) past "
                                         r"the end of argument 'y' \(4000 bytes\) by thread \(232,0,0\) "
                                         r"of block \(3,0,0\)"):
        f32.get_function("write_past_end")(y, 1000, grid=(4,), block=(256,))
    # The same launch within bounds is fine, and the emulator stays usable after a fault.
    f32.get_function("write_past_end")(y, 1024, grid=(1,), block=(250,))
    assert y.get()[:250].sum() == 250


def test_out_of_bounds_write_before_the_start(rt, f32):
    y = dev(rt, np.zeros(10, np.float32))
    with pytest.raises(MXNetError, match="kernel write_before_start: out-of-bounds write 4 byte"):
        f32.get_function("write_before_start")(y, 10, grid=(1,), block=(32,))


def test_barrier_divergence_exit(rt, f32):
    y = dev(rt, np.zeros(64, np.float32))
    with pytest.raises(MXNetError, match=r"kernel exit_before_barrier: barrier divergence .* thread "
                                         r"\(50,0,0\) exited while 50 thread\(s\) wait at __syncthreads"):
        f32.get_function("exit_before_barrier")(y, 50, grid=(1,), block=(64,))
    f32.get_function("exit_before_barrier")(y, 64, grid=(1,), block=(64,))   # no early exit: fine
    assert y.get().sum() == 128


def test_barrier_divergence_two_call_sites(rt, f32):
    y = dev(rt, np.zeros(8, np.float32))
    with pytest.raises(MXNetError, match="kernel two_barriers: barrier divergence .* on line"):
        f32.get_function("two_barriers")(y, grid=(1,), block=(8,))


def test_warp_divergence_exit_before_shuffle(rt, f32):
    x = dev(rt, np.arange(32, dtype=np.float32))
    y = dev(rt, np.zeros(32, np.float32))
    with pytest.raises(MXNetError, match=r"kernel exit_before_shuffle: warp divergence: "
                                         r"__shfl_down_sync in warp 0 .* has exited"):
        f32.get_function("exit_before_shuffle")(x, y, 20, grid=(1,), block=(32,))


def test_in_place_arguments_share_one_staging_buffer(rt, f32):
    x = dev(rt, np.arange(300, dtype=np.float32))
    f32.get_function("double_inplace")(x, x, 300, grid=(2,), block=(256,))
    np.testing.assert_array_equal(x.get(), 2 * np.arange(300, dtype=np.float32))


def test_bad_launch_configuration_and_arguments(rt, f32):
    y = dev(rt, np.zeros(4, np.float32))
    with pytest.raises(MXNetError, match="invalid launch configuration"):
        f32.get_function("write_past_end")(y, 4, grid=(1,), block=(2048,))
    with pytest.raises(MXNetError, match="takes 2 arguments"):
        f32.get_function("write_past_end")(y, grid=(1,), block=(4,))
    with pytest.raises(MXNetError, match="argument y is a device pointer"):
        f32.get_function("write_past_end")(np.zeros(4, np.float32), 4, grid=(1,), block=(4,))
    with pytest.raises(MXNetError, match="no kernel named 'nope'"):
        f32.get_function("nope")


def test_host_code_cannot_read_device_memory(rt):
    y = dev(rt, np.arange(4, dtype=np.float32))
    with pytest.raises(MXNetError, match="host code cannot read device memory"):
        np.asarray(y)
    assert y.reshape(2, -1).shape == (2, 2) and y.reshape((4,)).get().tolist() == [0, 1, 2, 3]
    with pytest.raises(MXNetError, match="cannot reshape"):
        y.reshape(3, 2)
    with pytest.raises(MXNetError, match="can only be written whole"):
        y[1:3] = 0


def test_modules_are_cached_on_disk(rt, tmp_path, monkeypatch):
    from mxref._ext.cuda import emulator
    monkeypatch.setenv("MXREF_CUDA_CACHE", str(tmp_path))
    first = emulator.build(str(PROBE), ["-Dreal_t=float"])
    assert first.parent == tmp_path and first.exists()
    mtime = first.stat().st_mtime_ns
    assert emulator.build(str(PROBE), ["-Dreal_t=float"]) == first
    assert first.stat().st_mtime_ns == mtime          # not rebuilt
    assert [p.name for p in tmp_path.iterdir()] == [first.name]     # and no temporary files left
