"""Operator threads: GEMMs split over them equal numpy's, and the BLAS thread control works."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mxref.ops.blas as blas
import mxref.ops.parallel as parallel


@pytest.mark.parametrize("m,k,n", [(64, 30, 7), (5, 40, 96), (1, 3, 1), (33, 17, 33)])
@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_parallel_matmul_equals_numpy(monkeypatch, m, k, n, threads):
    """Splitting rows (tall outputs) or columns (wide ones) gives numpy's product, every dtype."""
    monkeypatch.setattr(parallel, "NUM_THREADS", int(threads))
    monkeypatch.setattr(parallel, "SPLIT_GEMMS", True)
    monkeypatch.setattr(parallel, "MIN_GEMM_PER_THREAD", 1)
    monkeypatch.setattr(parallel, "MIN_WORK_PER_THREAD", 1)
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
        out = np.full((m, n), np.nan, dtype)
        assert parallel.parallel_matmul(a, b, out) is out
        np.testing.assert_allclose(out, a @ b, **tol)
        # Transposed operands (views) work too.
        out_t = np.empty((n, m), dtype)
        parallel.parallel_matmul(b.T, a.T, out_t)
        np.testing.assert_allclose(out_t, (a @ b).T, **tol)


def test_split_can_be_turned_off(monkeypatch):
    """``MXREF_BLAS_SPLIT=0`` leaves the product to one BLAS call (and BLAS's own threads)."""
    monkeypatch.setenv("MXREF_BLAS_SPLIT", "0")
    assert not blas.split_enabled()
    monkeypatch.setattr(parallel, "SPLIT_GEMMS", False)
    calls = []
    monkeypatch.setattr(parallel, "parallel_for", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(parallel, "MIN_GEMM_PER_THREAD", 1)
    a = np.ones((8, 8))
    out = np.empty((8, 8))
    parallel.parallel_matmul(a, a, out)
    assert calls == [] and (out == 8).all()


@pytest.mark.skipif(blas.get_num_threads() is None, reason="numpy's BLAS is not a controllable OpenBLAS")
def test_openblas_thread_count_round_trips():
    """The OpenBLAS numpy loaded is found and its thread count set and read back."""
    before = blas.get_num_threads()
    try:
        blas.set_num_threads(1)
        assert blas.get_num_threads() == 1
        a = np.random.default_rng(1).standard_normal((200, 200))
        np.testing.assert_allclose(a @ np.eye(200), a)
    finally:
        blas.set_num_threads(before)
    assert blas.get_num_threads() == before


def test_thread_count_comes_from_mxnet_then_omp_variables(monkeypatch):
    """``MXNET_OMP_MAX_THREADS`` wins over ``OMP_NUM_THREADS``; without either, the CPU count."""
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("MXNET_OMP_MAX_THREADS", "5")
    assert parallel._threads_from_env() == 5
    monkeypatch.delenv("MXNET_OMP_MAX_THREADS")
    assert parallel._threads_from_env() == 3
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 6)
    assert parallel._threads_from_env() == 6


@pytest.mark.skipif(blas.get_num_threads() is None, reason="numpy's BLAS is not a controllable OpenBLAS")
@pytest.mark.parametrize("split,expected", [("1", 1), ("0", 2)])
def test_import_hands_blas_threads_to_operator_threads(split, expected):
    """With two operator threads, ``import mxref`` sets OpenBLAS to one thread (so every GEMM of
    the process runs the same way); ``MXREF_BLAS_SPLIT=0`` leaves OpenBLAS's own count."""
    env = dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2", MXREF_BLAS_SPLIT=split)
    env.pop("MXNET_OMP_MAX_THREADS", None)
    code = "import mxref; from mxref.ops import blas; print(blas.get_num_threads())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout.split()[-1]) == expected


def test_repeated_runs_give_identical_bits():
    """The same forward+backward twice in one process gives the same bits (no switch of BLAS
    threads between the first and later runs)."""
    import mxref as mx
    rng = np.random.default_rng(0)
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(mx.sym.Convolution(data, kernel=(3, 3), num_filter=8), num_hidden=16)
    ex = net.simple_bind(mx.cpu(), data=(16, 3, 10, 10))
    for arr in ex.arg_dict.values():
        arr[:] = rng.standard_normal(arr.shape)
    results = []
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones(ex.outputs[0].shape))
        results.append([a.asnumpy().copy() for a in [ex.outputs[0]] + list(ex.grad_arrays)])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_parallel_elementwise_splits_only_large_contiguous_arrays(monkeypatch):
    """Large contiguous arrays are cut into one flat range per thread (same result as one call);
    small ones, and strided views, run in one call."""
    monkeypatch.setattr(parallel, "NUM_THREADS", 2)
    calls = []

    def tanh(x, out):
        calls.append(x.size)
        np.tanh(x, out=out)
    big = np.random.default_rng(0).standard_normal((4, parallel.MIN_ELEMENTS_PER_THREAD))
    out = np.empty_like(big)
    parallel.parallel_elementwise(tanh, big, out)
    np.testing.assert_array_equal(out, np.tanh(big))
    assert sorted(calls) == [big.size // 2] * 2
    for arrays in ((big[:, :10], np.empty((4, 10))), (big[:, ::2], np.empty((4, big.shape[1] // 2)))):
        calls.clear()
        parallel.parallel_elementwise(tanh, *arrays)
        assert calls == [arrays[0].size]
        np.testing.assert_array_equal(arrays[1], np.tanh(arrays[0]))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_a_pool_of_its_own(monkeypatch):
    """After fork the child's split work runs on fresh threads (the parent's do not exist there)."""
    monkeypatch.setattr(parallel, "NUM_THREADS", 2)
    monkeypatch.setattr(parallel, "MIN_WORK_PER_THREAD", 1)
    parallel.parallel_for(4, lambda lo, hi: None)      # the parent's pool exists now
    pid = os.fork()
    if pid == 0:    # child: split work must finish, and on a new pool
        try:
            hits = np.zeros(4, int)
            parallel.parallel_for(4, lambda lo, hi: hits.__setitem__(slice(lo, hi), 1))
            os._exit(0 if hits.all() else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_run_concurrently_runs_every_call_and_reraises():
    """Every call runs (the first on the calling thread); an exception of any is raised after all finish."""
    import threading  # noqa: PLC0415
    seen = []
    parallel.run_concurrently(lambda: seen.append(threading.get_ident()), lambda: seen.append("pool"))
    assert sorted(map(str, seen)) == sorted([str(threading.get_ident()), "pool"])
    done = []

    def fail():
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        parallel.run_concurrently(lambda: done.append(1), fail)
    assert done == [1]
    parallel.run_concurrently(lambda: done.append(2))
    assert done == [1, 2]


def test_concurrent_gemms_wants_enough_big_gemms(monkeypatch):
    """Side by side only with GEMM splitting on, at least one GEMM per operator thread, each big."""
    monkeypatch.setattr(parallel, "SPLIT_GEMMS", True)
    monkeypatch.setattr(parallel, "NUM_THREADS", 2)
    big = (128, 512, 512)
    assert parallel.concurrent_gemms(big, big)
    assert not parallel.concurrent_gemms(big, (128, 512, 10))
    assert not parallel.concurrent_gemms(big)
    monkeypatch.setattr(parallel, "NUM_THREADS", 4)
    assert not parallel.concurrent_gemms(big, big)
    monkeypatch.setattr(parallel, "NUM_THREADS", 2)
    monkeypatch.setattr(parallel, "SPLIT_GEMMS", False)
    assert not parallel.concurrent_gemms(big, big)


@pytest.mark.parametrize("value,expected", [("100", 1e-4), ("20", 2e-5), ("0", None), ("junk", 1e-4),
                                            ("", 1e-4)])
def test_gil_switch_interval_from_env(monkeypatch, value, expected):
    """``MXREF_GIL_SWITCH_US`` sets the interval in microseconds; 0 leaves the interpreter's own."""
    monkeypatch.setenv("MXREF_GIL_SWITCH_US", value)
    got = parallel._switch_interval_from_env()
    assert got == pytest.approx(expected) if expected else got is None


def test_import_shortens_the_gil_switch_interval():
    """``import mxref`` sets the switch interval (default 100 µs); ``0`` keeps Python's 5 ms."""
    code = "import sys, mxref; print(sys.getswitchinterval())"
    for value, expected in (("100", 1e-4), ("0", 0.005)):
        env = dict(os.environ, MXREF_GIL_SWITCH_US=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True, timeout=120).stdout
        assert float(out) == pytest.approx(expected)
