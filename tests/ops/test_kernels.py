"""The kernel table (``registry.register_kernel`` / ``get_kernel``): every registered 'cpu' kernel
has a comparison case with its reference, fast kernels decline what they do not take, the switch
selects the references, and a GPU op without a GPU kernel is an error, never the host."""
import numpy as np
import pytest

import mxref as mx
from mxref._ext import reference_kernels, switch
from mxref.base import MXNetError
from mxref.ndarray.imperative import invoke_name
from mxref.op_check import check_kernels, kernel_calls
from mxref.ops import registry
from mxref.ops.registry import OpDef, assign


def _conv(rng, dtype="float32"):
    x = rng.standard_normal((2, 3, 7, 6)).astype(dtype)
    w = rng.standard_normal((4, 3, 3, 2)).astype(dtype)
    return [x, w, rng.standard_normal(4).astype(dtype)], {"kernel": (3, 2), "num_filter": 4, "pad": (1, 0)}


def _conv_backward(rng, dtype="float32"):
    (x, w, _), p = _conv(rng, dtype)
    return [rng.standard_normal((2, 4, 7, 5)).astype(dtype), x, w], p


def _pool(rng, dtype="float32"):
    return [rng.standard_normal((2, 3, 7, 6)).astype(dtype)], {"kernel": (3, 2), "stride": (2, 2)}


def _pool_backward(rng, dtype="float32"):
    (x,), p = _pool(rng, dtype)
    y = mx.op_check.run_op("Pooling", [x], p)[0]
    return [rng.standard_normal(y.shape).astype(dtype), x, y], p


def _loss(rng, dtype="float32"):
    return [rng.standard_normal((8, 5)).astype(dtype), rng.integers(0, 5, 8).astype(dtype)], {}


def _loss_backward(rng, dtype="float32"):
    x, label = _loss(rng, dtype)[0]
    return [rng.standard_normal(8).astype(dtype), x, label], {}


def _sgd(rng, dtype="float32", n_states=0):
    arrays = [rng.standard_normal(300).astype(dtype) for _ in range(2 + n_states)]
    return arrays, {"lr": 0.1, "wd": 1e-3, "rescale_grad": 0.5, "clip_gradient": 0.3,
                    **({"momentum": 0.9} if n_states else {})}


def _multi_sgd(rng, dtype="float32", n_states=0, preloaded=False):
    # three weights of different sizes; the fused kernel runs each through the single op's kernel
    arrays = [rng.standard_normal(n).astype(dtype) for n in (300, 7, 40) for _ in range(2 + n_states)]
    p = {"num_weights": 3, "rescale_grad": 0.5, "clip_gradient": 0.3,
         **({"momentum": 0.9} if n_states else {})}
    lrs, wds = [0.1, 0.2, 0.05], [1e-3, 0.0, 1e-2]
    if preloaded:
        return arrays + [np.array(lrs, "float32"), np.array(wds, "float32")], p
    return arrays, {**p, "lrs": tuple(lrs), "wds": tuple(wds)}


# One small case per fast kernel; the deep comparisons (every geometry, dtype, req, thread count)
# live in tests/ops/nn/test_nn_window_kernels.py, test_softmax_ce_kernels.py and
# tests/optimizer/test_sgd_kernels.py. A kernel registered without a case here fails below.
CASES = {
    "Convolution": _conv, "_backward_Convolution": _conv_backward,
    "Pooling": _pool, "_backward_Pooling": _pool_backward,
    "_softmax_cross_entropy_pick": _loss, "_backward_softmax_cross_entropy_pick": _loss_backward,
    "sgd_update": _sgd, "sgd_mom_update": lambda rng, dtype="float32": _sgd(rng, dtype, 1),
    "multi_sgd_update": _multi_sgd,
    "multi_sgd_mom_update": lambda rng, dtype="float32": _multi_sgd(rng, dtype, 1),
    "preloaded_multi_sgd_update": lambda rng, dtype="float32": _multi_sgd(rng, dtype, 0, True),
    "preloaded_multi_sgd_mom_update": lambda rng, dtype="float32": _multi_sgd(rng, dtype, 1, True),
}


# -- relu in C (Activation act_type='relu', mxref/ops/nn/activation.py)

def _relu_case(rng, dtype="float32"):
    # the edge values numpy's maximum and float * bool product settle: NaN, +-0.0, +-inf
    x = rng.standard_normal((6, 7)).astype(dtype)
    x.flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -1.0]
    return [x], {"act_type": "relu"}


def _relu_backward_case(rng, dtype="float32"):
    (x,), p = _relu_case(rng, dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    g.flat[6:10] = [np.nan, np.inf, -np.inf, -2.0]      # where y = 0: NaN, NaN, NaN, -0.0
    x.flat[6:10] = -1.0
    return [g, np.maximum(x, 0)], p


CASES["Activation"] = _relu_case
CASES["_backward_Activation"] = _relu_backward_case


# -- clip's gradient in C (ReLU6, mxref/ops/indexing.py)

def _clip_backward_case(rng, dtype="float32"):
    # x on and beside the bounds (0.1 rounds differently in float32), NaN x (no gradient), and
    # NaN / inf / negative g where the mask is 0 (NaN, NaN, -0.0)
    x = rng.uniform(-1, 7, (5, 8)).astype(dtype)
    x.flat[:6] = [0.1, np.nextafter(np.asarray(0.1, dtype), 0), 6.0, np.nan, -np.inf, np.inf]
    g = rng.standard_normal(x.shape).astype(dtype)
    g.flat[6:9] = [np.nan, np.inf, -2.0]
    x.flat[6:9] = -1.0
    return [g, x], {"a_min": 0.1, "a_max": 6.0}


CASES["_backward_clip"] = _clip_backward_case


def test_every_cpu_kernel_has_a_comparison_case():
    """Registering a fast kernel means adding its case to ``CASES``."""
    missing = sorted({k.op for k in registry.list_kernels(device_type="cpu")} - set(CASES))
    assert not missing, f"fast kernels without a comparison case in {__file__}: {missing}"


# -- linalg.potrf through SciPy's LAPACK (mxref/ops/la/lapack_kernels.py), when SciPy is there ---

def _potrf(rng, dtype="float32"):
    a = rng.standard_normal((2, 130, 130)).astype(dtype)
    spd = a @ np.swapaxes(a, 1, 2) + 130 * np.eye(130, dtype=dtype)
    return [spd], {"lower": True}


CASES["_linalg_potrf"] = _potrf


@pytest.mark.parametrize("lower", [True, False])
def test_potrf_lapack_kernel_matches_the_reference_both_triangles(lower):
    """Only one triangle is read: garbage in the other changes nothing, for the kernel as for the
    reference; a matrix that is not positive definite is an MXNetError naming the operator."""
    if not registry.list_kernels("_linalg_potrf", "cpu"):
        pytest.skip("no LAPACK kernel for potrf (SciPy not installed or MXREF_ENABLE_EXT=0)")
    (spd,), _ = _potrf(np.random.default_rng(1), "float64")
    junk = spd.copy()
    junk[:, np.triu_indices(130, 1)[0] if lower else np.tril_indices(130, -1)[0],
         np.triu_indices(130, 1)[1] if lower else np.tril_indices(130, -1)[1]] = 7.0
    check_kernels("_linalg_potrf", [junk], {"lower": lower})
    with pytest.raises(MXNetError, match="potrf"):
        mx.nd.linalg.potrf(mx.nd.array(-np.eye(130), dtype="float64")).asnumpy()


# -- the table's rules, on an operator of this test's own ------------------------------------

def _double(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], inputs[0] * 2)


@pytest.fixture
def op():
    """``_kt_double`` (reference: ``2 * x``), registered for this module's tests only."""
    if not registry.exists("_kt_double"):
        registry.register(OpDef("_kt_double", _double))
    return registry.get("_kt_double")


def _fast_double(octx, p, inputs, outputs, req):
    assign(outputs[0], req[0], inputs[0] + inputs[0])


def _float32_only(p, inputs, outputs, req):
    return inputs[0].dtype == np.float32


@switch.fast_kernels()
def test_get_kernel_asks_each_fast_kernel_then_runs_the_reference(op):
    kernel = registry.register_kernel("_kt_double", "cpu", _fast_double, applies=_float32_only)
    try:
        assert registry.list_kernels("_kt_double") == [kernel]
        fn = registry.get_kernel(op, "cpu")
        assert fn is not op.fcompute and registry.get_kernel(op, "cpu_pinned") is fn
        for dtype, fast_calls in (("float32", 1), ("float64", 0)):
            out = np.zeros(3, dtype)
            with kernel_calls(["_kt_double"]) as calls:
                fn(None, {}, [np.arange(3, dtype=dtype)], [out], ["write"])
            assert calls[kernel.name] == fast_calls
            np.testing.assert_array_equal(out, [0, 2, 4])
        with pytest.raises(AssertionError, match="declines"):
            check_kernels("_kt_double", [np.arange(3.0)])
        check_kernels("_kt_double", [np.arange(3.0)], expect_fast=False)
        check_kernels("_kt_double", [np.arange(3, dtype="f4")])
    finally:
        registry.unregister_kernel(kernel)
    assert registry.get_kernel(op, "cpu") is op.fcompute and not registry.list_kernels("_kt_double")


def test_check_kernels_catches_a_wrong_kernel(op):
    kernel = registry.register_kernel("_kt_double", "cpu", lambda o, p, i, out, r: assign(out[0], r[0], i[0]))
    try:
        with pytest.raises(AssertionError, match="vs the reference of _kt_double"):
            check_kernels("_kt_double", [np.arange(3.0)])
    finally:
        registry.unregister_kernel(kernel)


def test_reference_kernels_block_selects_the_reference_and_restores(op):
    kernel = registry.register_kernel("_kt_double", "cpu", _fast_double)
    try:
        with reference_kernels():
            assert switch.reference_only() and switch.reason() == "reference_kernels()"
            assert registry.get_kernel(op, "cpu") is op.fcompute
            assert registry.fast_kernel_for("_kt_double", "cpu", {}, [np.zeros(1)], [np.zeros(1)],
                                            ["write"]) is None
        if not switch.reference_only():      # back to the process's state (MXREF_ENABLE_EXT)
            assert registry.get_kernel(op, "cpu") is not op.fcompute
            assert registry.fast_kernel_for("_kt_double", "cpu", {}, [np.zeros(1)], [np.zeros(1)],
                                            ["write"]) is kernel
    finally:
        registry.unregister_kernel(kernel)


@switch.fast_kernels()
def test_imperative_calls_follow_the_switch(op):
    """A cached imperative plan resolves its kernel again when the switch flips."""
    kernel = registry.register_kernel("_kt_double", "cpu", _fast_double)
    try:
        x = mx.nd.array([1.0, 2.0])
        with kernel_calls(["_kt_double"]) as calls:
            np.testing.assert_array_equal(invoke_name("_kt_double", [x], {})[0].asnumpy(), [2, 4])
            with reference_kernels():
                np.testing.assert_array_equal(invoke_name("_kt_double", [x], {})[0].asnumpy(), [2, 4])
            np.testing.assert_array_equal(invoke_name("_kt_double", [x], {})[0].asnumpy(), [2, 4])
        assert calls[kernel.name] == 2
    finally:
        registry.unregister_kernel(kernel)


def test_a_gpu_op_without_a_gpu_kernel_is_an_error(op):
    with pytest.raises(MXNetError, match="_kt_double has no kernel for device type 'gpu'"):
        registry.get_kernel(op, "gpu")
    kernel = registry.register_kernel("_kt_double", "gpu", _fast_double, applies=_float32_only)
    try:
        fn = registry.get_kernel(op, "gpu")
        with reference_kernels():                  # the switch never sends a GPU op to the host
            assert registry.get_kernel(op, "gpu") is fn
        with pytest.raises(MXNetError, match="no 'gpu' kernel takes inputs .*float64.* host"):
            fn(None, {}, [np.zeros(2)], [np.zeros(2)], ["write"])
    finally:
        registry.unregister_kernel(kernel)


def test_register_kernel_checks_its_arguments(op):
    with pytest.raises(MXNetError, match="not registered"):
        registry.register_kernel("_kt_no_such_op", "cpu", _fast_double)
    with pytest.raises(MXNetError, match="device type"):
        registry.register_kernel("_kt_double", "cpu_pinned", _fast_double)
    with pytest.raises(MXNetError, match="must state its tol"):
        registry.register_kernel("_kt_double", "cpu", _fast_double, exact=False)
    assert not registry.list_kernels("_kt_double")


# -- BatchNorm (mxref/_ext/norm_kernels.pyx) ------------------------------------------------------

def _batch_norm(rng, dtype="float32"):
    x = rng.standard_normal((2, 3, 4, 5)).astype(dtype)
    gamma, beta, mmean = (rng.standard_normal(3).astype(dtype) for _ in range(3))
    return [x, gamma, beta, mmean, rng.uniform(0.5, 2, 3).astype(dtype)], {"fix_gamma": False}


def _batch_norm_backward(rng, dtype="float32"):
    (x, gamma, *_), p = _batch_norm(rng, dtype)
    mean, invstd = rng.standard_normal(3).astype(dtype), rng.uniform(0.5, 2, 3).astype(dtype)
    return [rng.standard_normal(x.shape).astype(dtype), x, gamma, mean, invstd], p


CASES.update({"BatchNorm": _batch_norm, "_backward_BatchNorm": _batch_norm_backward})


@pytest.mark.parametrize("is_train", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op_name", ["BatchNorm", "_backward_BatchNorm"])
def test_batch_norm_kernels_match_the_reference(op_name, dtype, is_train):
    """Moving statistics (inference) and batch statistics (training)."""
    if not registry.list_kernels(op_name, "cpu"):
        pytest.skip(f"no fast kernel for {op_name} (extension not built or MXREF_ENABLE_EXT=0)")
    inputs, params = CASES[op_name](np.random.default_rng(0), dtype)
    check_kernels(op_name, inputs, params, is_train=is_train)


# -- Convolution: Winograd F(2x2, 3x3) and the cut to live taps (mxref/ops/nn/winograd.py, convolution.py)

_CONV_FAST_CASES = {
    # name: (data shape, num_filter, kernel, stride, pad)
    "winograd": ((2, 16, 7, 6), 24, (3, 3), (1, 1), (1, 1)),
    "winograd_pad0_pad2": ((3, 16, 5, 9), 16, (3, 3), (1, 1), (0, 2)),
    "winograd_1_tile": ((2, 32, 2, 2), 16, (3, 3), (1, 1), (1, 1)),
    "live_taps_1x1_input": ((2, 16, 1, 1), 16, (3, 3), (1, 1), (1, 1)),
    "live_taps_stride_2": ((2, 16, 2, 2), 8, (3, 3), (2, 2), (1, 1)),
    "live_taps_1d": ((2, 3, 1), 4, (3,), (1,), (1,)),
    "pointwise_small_output": ((3, 8, 2, 3), 5, (1, 1), (1, 1), (0, 0)),
}


def _conv_fast_case(name, dtype, no_bias):
    shape, f, k, s, pd = _CONV_FAST_CASES[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((f, shape[1]) + k).astype(dtype)
    p = {"kernel": k, "stride": s, "pad": pd, "num_filter": f, "no_bias": no_bias}
    return ([x, w] if no_bias else [x, w, rng.standard_normal(f).astype(dtype)]), p


@pytest.mark.parametrize("no_bias", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(_CONV_FAST_CASES))
def test_convolution_fast_paths_match_the_reference(name, dtype, no_bias):
    """Forward, and backward under every request (the data gradient of 3x3 stride-1 filters
    is Winograd's too; the cut taps' weight gradient is 0)."""
    if not registry.list_kernels("Convolution", "cpu"):
        pytest.skip("no fast kernel for Convolution (extension not built or MXREF_ENABLE_EXT=0)")
    inputs, p = _conv_fast_case(name, dtype, no_bias)
    out = check_kernels("Convolution", inputs, p)["reference"][0]
    rng = np.random.default_rng(1)
    og = rng.standard_normal(out.shape).astype(dtype)
    for req in (["write"] * 3, ["null", "write", "write"], ["write", "null", "null"], ["add"] * 3):
        start = [rng.standard_normal(a.shape).astype(dtype) for a in inputs]
        check_kernels("_backward_Convolution", [og] + inputs[:2], p, req=req[:len(inputs)], outputs=start)


def test_winograd_runs_for_3x3_stride_1_and_only_there(monkeypatch):
    from mxref.ops.nn import winograd
    if winograd.C is None or not registry.list_kernels("Convolution", "cpu"):
        pytest.skip("no Winograd kernels (extension not built or MXREF_ENABLE_EXT=0)")
    calls = []
    real = winograd.conv3x3
    monkeypatch.setattr(winograd, "conv3x3",
                        lambda *a, **k: calls.append(k.get("flip", False)) or real(*a, **k))
    x = mx.nd.array(np.random.default_rng(0).standard_normal((2, 16, 6, 6)))
    w = mx.nd.array(np.random.default_rng(1).standard_normal((16, 16, 3, 3)))
    mx.nd.Convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True).wait_to_read()
    assert calls == [False]
    mx.nd.Convolution(x, w, kernel=(3, 3), stride=(2, 2), num_filter=16, no_bias=True).wait_to_read()
    mx.nd.Convolution(x[:, :8], w[:, :8], kernel=(3, 3), num_filter=16, no_bias=True).wait_to_read()
    assert calls == [False]          # stride 2, and 8 input channels: im2col
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True)
    y.backward()
    x.grad.wait_to_read()
    assert calls == [False, False, True]     # forward, then the data gradient (flipped filter)


def test_winograd_float32_error_against_float64():
    """The documented float32 tolerance, on a ResNet-sized channel count."""
    from mxref.ops.nn import winograd
    if winograd.C is None:
        pytest.skip("no Winograd kernels (extension not built or MXREF_ENABLE_EXT=0)")
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 256, 7, 7)), rng.standard_normal((64, 256, 3, 3)) / 48
    exact = np.zeros((2, 64, 7, 7))
    winograd.conv3x3(x, w, None, (1, 1), exact, "write")
    got = np.zeros((2, 64, 7, 7), np.float32)
    winograd.conv3x3(x.astype(np.float32), w.astype(np.float32), None, (1, 1), got, "write")
    rtol, atol = winograd.TOL["float32"]
    np.testing.assert_allclose(got, exact, rtol=rtol, atol=atol)


@pytest.mark.parametrize("chunk_tiles", [1, 5, 40, 512])
def test_winograd_chunks_of_samples_and_tile_rows(monkeypatch, chunk_tiles):
    """Chunks of several samples, of one, and of tile rows within a sample give the same result."""
    from mxref.ops.nn import winograd
    if winograd.C is None or not registry.list_kernels("Convolution", "cpu"):
        pytest.skip("no Winograd kernels (extension not built or MXREF_ENABLE_EXT=0)")
    monkeypatch.setattr(winograd, "CHUNK_TILES", chunk_tiles)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((5, 16, 9, 11)), rng.standard_normal((17, 16, 3, 3))
    check_kernels("Convolution", [x, w, rng.standard_normal(17)],
                  {"kernel": (3, 3), "pad": (1, 1), "num_filter": 17})


# -- relu in C: what the kernels decline, and thread splits -----------------------------------------

@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("op_name, case", [("Activation", _relu_case),
                                           ("_backward_Activation", _relu_backward_case)])
def test_relu_kernels_decline_other_act_types_and_add(op_name, case):
    """Only relu, written, on contiguous float arrays goes to C; the rest stays with numpy."""
    if not registry.list_kernels(op_name, "cpu"):
        pytest.skip("no relu kernels (extension not built or MXREF_ENABLE_EXT=0)")
    inputs, _ = case(np.random.default_rng(0))
    check_kernels(op_name, inputs, {"act_type": "tanh"}, expect_fast=False)
    check_kernels(op_name, [a.astype("float16") for a in inputs], {"act_type": "relu"}, expect_fast=False)
    check_kernels(op_name, inputs, {"act_type": "relu"}, req="add", expect_fast=False)
    strided = [np.asfortranarray(a) for a in inputs]
    check_kernels(op_name, strided, {"act_type": "relu"}, expect_fast=False)


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_relu_kernels_split_over_threads_match(monkeypatch):
    """Arrays large enough for parallel_elementwise to cut still give the reference's bits."""
    from mxref.ops import parallel
    if not registry.list_kernels("Activation", "cpu"):
        pytest.skip("no relu kernels (extension not built or MXREF_ENABLE_EXT=0)")
    monkeypatch.setattr(parallel, "MIN_ELEMENTS_PER_THREAD", 8)
    rng = np.random.default_rng(1)
    (x,), p = _relu_case(rng)
    check_kernels("Activation", [x], p)
    check_kernels("_backward_Activation", _relu_backward_case(rng)[0], p)


def test_clip_backward_kernel_split_over_threads(monkeypatch):
    """ReLU6's gradient in C, cut into flat ranges over the operator threads: the same bits."""
    from mxref.ops import parallel
    if not registry.list_kernels("_backward_clip", "cpu"):
        pytest.skip("no clip kernel (extension not built or MXREF_ENABLE_EXT=0)")
    monkeypatch.setattr(parallel, "MIN_ELEMENTS_PER_THREAD", 8)
    monkeypatch.setattr(parallel, "NUM_THREADS", 3)
    inputs, p = _clip_backward_case(np.random.default_rng(3))
    check_kernels("_backward_clip", inputs, p)
    # what it declines goes to numpy: 'add', float16, strided arrays
    check_kernels("_backward_clip", inputs, p, req="add", expect_fast=False)
    check_kernels("_backward_clip", [a.astype("float16") for a in inputs], p, expect_fast=False)
    check_kernels("_backward_clip", [np.asfortranarray(a) for a in inputs], p, expect_fast=False)


# NOTE: last in the file: ``sorted(CASES)`` is read when the decorator runs, so a case added to
# ``CASES`` below this line would never be compared.
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op_name", sorted(CASES))
def test_each_cpu_kernel_matches_the_reference(op_name, dtype):
    """Bit for bit where the kernel says ``exact``, else within the tolerance it states."""
    if not registry.list_kernels(op_name, "cpu"):
        pytest.skip(f"no fast kernel for {op_name} (extension not built or MXREF_ENABLE_EXT=0)")
    inputs, params = CASES[op_name](np.random.default_rng(0), dtype)
    results = check_kernels(op_name, inputs, params)
    assert len(results) == 1 + len(registry.list_kernels(op_name, "cpu"))
