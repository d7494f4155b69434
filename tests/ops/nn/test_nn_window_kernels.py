"""The Cython window kernels (Convolution, max Pooling: their 'cpu' entries in the kernel table)
against the numpy reference, and the batch split of ``parallel_for``: same results on every
geometry, dtype and thread count."""
import itertools

import numpy as np
import pytest

import mxref.ops.nn.convolution as conv
import mxref.ops.nn.im2col as im2col
import mxref.ops.nn.pooling as pool
import mxref.ops.parallel as parallel
from mxref.op_check import check_kernels, fast_and_reference
from mxref.ops import registry

needs_ext = pytest.mark.skipif(im2col.C is None, reason="mxref._ext.nn_kernels not built or disabled")
CONV = ("Convolution", "_backward_Convolution")
POOL = ("Pooling", "_backward_Pooling")


def call(op_name, p, inputs, outputs, req):
    """The kernel the table gives now (fast or reference), called once."""
    registry.get_kernel(registry.get(op_name), "cpu")(None, p, inputs, outputs, req)


def params(module, **kw):
    p = {k: v.default for k, v in module.PARAMS.items()}
    p.update(kw)
    return p


def conv_case(rng, nd, dtype, stride, pad, dilate, group, req):
    kernel = (3, 2)[:nd] if nd == 2 else (3,)
    x = rng.standard_normal((3, 4) + ((9, 7) if nd == 2 else (11,))).astype(dtype)
    w = rng.standard_normal((6, 4 // group) + kernel).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    p = params(conv, kernel=kernel, stride=(stride,) * nd, pad=(pad,) * nd, dilate=(dilate,) * nd,
               num_filter=6, num_group=group)
    out_shape = conv.infer_shape(p, [x.shape, w.shape, b.shape])[1][0]
    og = rng.standard_normal(out_shape).astype(dtype)

    def run():
        out = np.full(out_shape, 0.5, dtype)
        call("Convolution", p, [x, w, b], [out], [req])
        grads = [np.full_like(a, 0.25) for a in (x, w, b)]
        call("_backward_Convolution", p, [og, x, w], grads, [req] * 3)
        return [out] + grads
    return run


@needs_ext
@pytest.mark.parametrize("nd,dtype,stride,pad,dilate,group",
                         list(itertools.product((1, 2), (np.float32, np.float64), (1, 2), (0, 2),
                                                (1, 2), (1, 2))))
def test_convolution_cython_equals_numpy(rng, nd, dtype, stride, pad, dilate, group):
    """Forward and all three gradients agree; the data gradient's sums run in the same order."""
    fast, ref = fast_and_reference(conv_case(rng, nd, dtype, stride, pad, dilate, group, "write"), CONV)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(fast, ref):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    np.testing.assert_array_equal(fast[1], ref[1])  # col2im itself is bit-identical


@needs_ext
def test_convolution_cython_add_and_null_requests(rng):
    """``req='add'`` accumulates into what the output held; ``'null'`` leaves it untouched."""
    fast, ref = fast_and_reference(conv_case(rng, 2, np.float64, 1, 1, 1, 1, "add"), CONV)
    for a, b in zip(fast, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    fast, ref = fast_and_reference(conv_case(rng, 2, np.float64, 1, 1, 1, 1, "null"), CONV)
    for a, b in zip(fast, ref):
        np.testing.assert_array_equal(a, b)
    assert (fast[1] == 0.25).all()


def pool_case(rng, nd, dtype, stride, pad, convention, nan):
    kernel = (2, 3)[:nd] if nd == 2 else (3,)
    x = rng.standard_normal((3, 4) + ((9, 8) if nd == 2 else (11,))).astype(dtype)
    x[0, 0, ..., 1] = x[0, 0, ..., 0]  # ties: the first offset in kernel order takes the gradient
    if nan:
        x[1, 2, ..., 3] = np.nan
    p = params(pool, kernel=kernel, stride=(stride,) * nd, pad=(pad,) * nd, pooling_convention=convention)
    out_shape = pool.infer_shape(p, [x.shape])[1][0]
    og = rng.standard_normal(out_shape).astype(dtype)

    def run():
        y = np.empty(out_shape, dtype)
        call("Pooling", p, [x], [y], ["write"])
        dx = np.empty_like(x)
        call("_backward_Pooling", p, [og, x, y], [dx], ["write"])
        return y, dx
    return run


@needs_ext
@pytest.mark.parametrize("nd,dtype,stride,pad,convention,nan",
                         list(itertools.product((1, 2), (np.float32, np.float64), (1, 2), (0, 1),
                                                ("valid", "full"), (False, True))))
def test_max_pooling_cython_equals_numpy(rng, nd, dtype, stride, pad, convention, nan):
    """The maxima are identical (NaN included); the gradient goes to the same positions (with
    overlapping windows a position's contributions may be added in another order)."""
    case = pool_case(rng, nd, dtype, stride, pad, convention, nan)
    (y_fast, dx_fast), (y_ref, dx_ref) = fast_and_reference(case, POOL)
    np.testing.assert_array_equal(y_fast, y_ref)
    np.testing.assert_allclose(dx_fast, dx_ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(dx_fast != 0, dx_ref != 0)
    if stride >= 2 and nd == 1:  # non-overlapping windows: one contribution each, same bits
        np.testing.assert_array_equal(dx_fast, dx_ref)


@needs_ext
def test_fast_path_applies_only_where_it_can():
    """3-D windows and float16 stay on numpy; 1-D and 2-D float32/64 take the Cython kernels."""
    assert im2col.c_takes(np.zeros((1, 1, 2, 2), np.float32))
    assert im2col.c_takes(np.zeros((1, 1, 2), np.float64))
    assert not im2col.c_takes(np.zeros((1, 1, 2, 2, 2), np.float32))
    assert not im2col.c_takes(np.zeros((1, 1, 2, 2), np.float16))
    (fwd,) = registry.list_kernels("Convolution", "cpu")
    p = params(conv, kernel=(1, 1), num_filter=1)
    assert fwd.takes(p, [np.zeros((1, 1, 2, 2), np.float32)], [], ["write"])
    assert not fwd.takes(p, [np.zeros((1, 1, 2, 2, 2), np.float32)], [], ["write"])
    (max_pool,) = registry.list_kernels("Pooling", "cpu")
    x = np.zeros((1, 1, 2, 2), np.float32)
    assert max_pool.takes(params(pool, kernel=(2, 2)), [x], [], ["write"])
    assert not max_pool.takes(params(pool, kernel=(2, 2), pool_type="avg"), [x], [], ["write"])


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_parallel_for_covers_the_range_once(monkeypatch, threads):
    """Every index is handled exactly once, in contiguous ranges, whatever the thread count."""
    monkeypatch.setattr(parallel, "NUM_THREADS", threads)
    monkeypatch.setattr(parallel, "MIN_WORK_PER_THREAD", 1)
    hits = np.zeros(10, int)
    ranges = []

    def body(lo, hi):
        ranges.append((lo, hi))
        hits[lo:hi] += 1
    parallel.parallel_for(10, body)
    assert (hits == 1).all()
    assert len(ranges) == min(threads, 10)


def test_parallel_for_reraises_and_small_work_stays_inline(monkeypatch):
    """A failing range re-raises in the caller; tiny work runs on the calling thread only."""
    monkeypatch.setattr(parallel, "NUM_THREADS", 2)
    monkeypatch.setattr(parallel, "MIN_WORK_PER_THREAD", 1)

    def body(lo, hi):
        if lo > 0:
            raise ValueError(f"range {lo}:{hi} failed")
    with pytest.raises(ValueError, match="range 2:4 failed"):
        parallel.parallel_for(4, body)
    monkeypatch.setattr(parallel, "MIN_WORK_PER_THREAD", 10 ** 9)
    calls = []
    parallel.parallel_for(4, lambda lo, hi: calls.append((lo, hi)))
    assert calls == [(0, 4)]


@needs_ext
@pytest.mark.parametrize("threads", ["2", "3"])
def test_kernels_split_over_threads_give_identical_bits(monkeypatch, threads):
    """Splitting the batch over threads changes nothing: each sample is computed the same way."""
    monkeypatch.setattr(parallel, "MIN_WORK_PER_THREAD", 1)
    results = {}
    for n in ("1", threads):
        monkeypatch.setattr(parallel, "NUM_THREADS", int(n))
        results[n] = (conv_case(np.random.default_rng(0), 2, np.float32, 1, 1, 1, 1, "write")()
                      + list(pool_case(np.random.default_rng(1), 2, np.float32, 1, 1, "full", True)()))
    for a, b in zip(results["1"], results[threads]):
        np.testing.assert_array_equal(a, b)


# -- depthwise filters (C loops, no columns) and 1x1 filters (one GEMM per sample) ----------------

@needs_ext
@pytest.mark.parametrize("nd,stride,pad,dilate,mult",
                         [(2, 1, 1, 1, 1), (2, 2, 1, 1, 1), (2, 1, 0, 2, 2), (1, 2, 2, 1, 3),
                          (2, 3, 2, 2, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [3, 6])
def test_depthwise_convolution_c_equals_numpy(rng, nd, stride, pad, dilate, mult, dtype, batch):
    """``num_group`` = channels (``mult`` filters each): forward, the three gradients, every req;
    a batch of 3 runs the row-wise loops, one of 6 the batch-innermost ones."""
    c, kernel = 4, (3, 2) if nd == 2 else (3,)
    x = rng.standard_normal((batch, c) + ((9, 8) if nd == 2 else (11,))).astype(dtype)
    assert im2col.batch_inner(batch, 11) == (batch == 6)
    w = rng.standard_normal((c * mult, 1) + kernel).astype(dtype)
    b = rng.standard_normal(c * mult).astype(dtype)
    p = dict(kernel=kernel, stride=(stride,) * nd, pad=(pad,) * nd, dilate=(dilate,) * nd,
             num_filter=c * mult, num_group=c)
    assert im2col.depthwise(params(conv, **p), x)
    y = check_kernels("Convolution", [x, w, b], p)["reference"][0]
    check_kernels("Convolution", [x, w, b], p, req="add")
    og = rng.standard_normal(y.shape).astype(dtype)
    for req in ("write", ["null", "write", "add"], ["add", "null", "write"]):
        check_kernels("_backward_Convolution", [og, x, w], p, req=req)


@needs_ext
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pointwise_convolution_c_equals_numpy(rng, bias, dtype):
    """1x1 filters: forward, and the gradients over large outputs (per-sample GEMMs on the
    operator threads) and small ones (whole-batch GEMMs), every req."""
    # outputs of 1 position (one (N, C) @ (C, F) GEMM), a few (a whole-batch GEMM), 36 (per sample)
    for xs, k in (((3, 5, 4, 6), (1, 1)), ((3, 5, 6), (1,)), ((3, 5, 20), (1,)), ((3, 5, 1, 1), (1, 1)),
                  ((3, 5, 6, 6), (1, 1))):
        x = rng.standard_normal(xs).astype(dtype)
        w = rng.standard_normal((7, 5) + k).astype(dtype)
        ins = [x, w] + ([rng.standard_normal(7).astype(dtype)] if bias else [])
        p = dict(kernel=k, num_filter=7, no_bias=not bias)
        y = check_kernels("Convolution", ins, p)["reference"][0]
        check_kernels("Convolution", ins, p, req="add")
        og = rng.standard_normal(y.shape).astype(dtype)
        for req in (["write"] * 3, ["add"] * 3, ["null", "write", "add"], ["add", "null", "write"]):
            check_kernels("_backward_Convolution", [og, x, w], p, req=req[:len(ins)])


@needs_ext
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_per_sample_convolution_c_equals_numpy(rng, dtype):
    """Outputs of >= 16 positions: im2col + GEMM per sample, every req, 1-D and 2-D, bias or not."""
    for xs, k, pad, stride in (((3, 4, 20, 18), (3, 3), (1, 1), (1, 1)), ((2, 3, 600), (5,), (2,), (2,))):
        x = rng.standard_normal(xs).astype(dtype)
        for bias in (False, True):
            w = rng.standard_normal((5, xs[1]) + k).astype(dtype)
            ins = [x, w] + ([rng.standard_normal(5).astype(dtype)] if bias else [])
            p = dict(kernel=k, num_filter=5, pad=pad, stride=stride, no_bias=not bias)
            out_shape = conv.infer_shape(params(conv, **p), [a.shape for a in ins])[1][0]
            assert im2col.per_sample(params(conv, **p), x, out_shape[2:])
            check_kernels("Convolution", ins, p)
            check_kernels("Convolution", ins, p, req="add")


@needs_ext
@pytest.mark.parametrize("batch", [3, 6])
def test_depthwise_split_over_threads_gives_identical_bits(monkeypatch, batch):
    """Both depthwise loops split channels over threads; each channel's sums stay in one order."""
    monkeypatch.setattr(parallel, "MIN_WORK_PER_THREAD", 1)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((batch, 6, 8, 8)).astype(np.float32)
    w = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)
    p = params(conv, kernel=(3, 3), pad=(1, 1), num_filter=6, num_group=6, no_bias=True)
    og = rng.standard_normal(x.shape).astype(np.float32)
    results = []
    for threads in (1, 3):
        monkeypatch.setattr(parallel, "NUM_THREADS", threads)
        out, dx, dw = np.empty_like(x), np.empty_like(x), np.empty_like(w)
        call("Convolution", p, [x, w], [out], ["write"])
        call("_backward_Convolution", p, [og, x, w], [dx, dw], ["write", "write"])
        results.append((out, dx, dw))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
