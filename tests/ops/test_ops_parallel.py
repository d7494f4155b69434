"""Operator threads: GEMMs split over them equal numpy's, and the BLAS thread control works."""
import numpy as np
import pytest

import mxref.ops.blas as blas
import mxref.ops.parallel as parallel


@pytest.mark.parametrize("m,k,n", [(64, 30, 7), (5, 40, 96), (1, 3, 1), (33, 17, 33)])
@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_parallel_matmul_equals_numpy(monkeypatch, m, k, n, threads):
    """Splitting rows (tall outputs) or columns (wide ones) gives numpy's product, every dtype."""
    monkeypatch.setattr(parallel, "NUM_THREADS", int(threads))
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
