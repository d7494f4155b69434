"""The one-pass C loops of ``sgd_update`` / ``sgd_mom_update`` (``mxref/_ext/optimizer_kernels.pyx``,
their 'cpu' kernels) give the numpy reference's bits: every dtype, clipping on and off, weight
decay, sizes split over the operator threads or not, NaN and inf gradients, the weight updated in
place or into another array; and the cases they leave to the reference still work."""
import numpy as np
import pytest

import mxref as mx
import mxref.ops.optimizer.sgd as sgd
import mxref.ops.parallel as parallel
from mxref.op_check import fast_and_reference, kernel_calls
from mxref.ops import registry

needs_ext = pytest.mark.skipif(sgd._EXT is None, reason="mxref._ext.optimizer_kernels not built or disabled")
OPS = {"sgd_update": 0, "sgd_mom_update": 1}


def params(op_name, **kw):
    op = registry.get(op_name)
    return op.parse_params({"lr": 0.05, **kw})


def kernel(op_name):
    """The kernel the table gives now: the C loop where it takes the call, else the reference."""
    return registry.get_kernel(registry.get(op_name), "cpu")


def run_both(op_name, p, w, g, states, out_is_weight=True, req="write"):
    """The update through the C loops, then through the numpy reference, each on fresh copies."""
    def run():
        w2, st = w.copy(), [s.copy() for s in states]
        out = w2 if out_is_weight else np.full_like(w, 7)
        kernel(op_name)(None, p, [w2, g, *st], [out], [req])
        return out, st
    return fast_and_reference(run, (op_name,))


@needs_ext
@pytest.mark.parametrize("op_name", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("clip", [-1.0, 0.02])
@pytest.mark.parametrize("size", [1, 1000, 300_001])     # the last is split over two threads
def test_c_loops_give_the_twins_bits(op_name, dtype, clip, size):
    rng = np.random.default_rng(size)
    w, g = rng.standard_normal(size).astype(dtype), rng.standard_normal(size).astype(dtype)
    states = [rng.standard_normal(size).astype(dtype) for _ in range(OPS[op_name])]
    kw = {"wd": 1e-3, "rescale_grad": 1 / 128, "clip_gradient": clip}
    if OPS[op_name]:
        kw["momentum"] = 0.9
    (fast, fast_st), (ref, ref_st) = run_both(op_name, params(op_name, **kw), w, g, states)
    np.testing.assert_array_equal(fast, ref)
    for a, b in zip(fast_st, ref_st):
        np.testing.assert_array_equal(a, b)


@needs_ext
def test_split_over_threads_matches_one_thread(monkeypatch):
    rng = np.random.default_rng(1)
    w, g, m = (rng.standard_normal(400_000).astype("f4") for _ in range(3))
    p = params("sgd_mom_update", momentum=0.9, wd=1e-4, rescale_grad=0.01)
    results = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(parallel, "NUM_THREADS", threads)
        w2, m2 = w.copy(), m.copy()
        with kernel_calls(["sgd_mom_update"]) as calls:
            kernel("sgd_mom_update")(None, p, [w2, g, m2], [w2], ["write"])
        assert calls == {"optimizer_kernels.sgd_mom_update": 1}
        results.append((w2, m2))
    for w2, m2 in results[1:]:
        np.testing.assert_array_equal(w2, results[0][0])
        np.testing.assert_array_equal(m2, results[0][1])


@needs_ext
def test_nan_and_inf_gradients_and_a_separate_output():
    g = np.array([np.nan, np.inf, -np.inf, 1.0, -3.0], "f4")
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0], "f4")
    m = np.array([0.5, 0.0, -0.5, 1.0, 2.0], "f4")
    for clip in (-1.0, 0.5):
        p = params("sgd_mom_update", momentum=0.9, wd=0.01, clip_gradient=clip)
        (fast, fast_st), (ref, ref_st) = run_both("sgd_mom_update", p, w, g, [m], out_is_weight=False)
        np.testing.assert_array_equal(fast, ref)
        np.testing.assert_array_equal(fast_st[0], ref_st[0])


def test_cases_left_to_numpy_still_update():
    """float16, a strided weight, mixed dtypes and req='add' take the reference; the result is the
    formula's."""
    takes = sgd._c_loop_takes
    p = params("sgd_update")
    assert not takes(p, [np.zeros(4, "f2"), np.zeros(4, "f2")], [np.zeros(4, "f2")], ["write"])
    assert not takes(p, [np.zeros(8, "f4")[::2], np.zeros(4, "f4")], [np.zeros(4, "f4")], ["write"])
    assert not takes(p, [np.zeros(4, "f4"), np.zeros(4, "f8")], [np.zeros(4, "f4")], ["write"])
    assert not takes(p, [np.zeros(4, "f4"), np.zeros(4, "f4")], [np.zeros(4, "f4")], ["add"])
    assert takes(p, [np.zeros(4, "f4"), np.zeros(4, "f4")], [np.zeros(4, "f4")], ["write"])
    w, g, m = np.array([1.0, 2.0], "f4"), np.array([0.5, -1.0], "f4"), np.array([0.1, 0.2], "f4")
    p = params("sgd_mom_update", momentum=0.5)
    out = np.array([10.0, 10.0], "f4")
    with kernel_calls(["sgd_mom_update"]) as calls:
        kernel("sgd_mom_update")(None, p, [w.copy(), g, m], [out], ["add"])
    assert not any(calls.values())
    mom = 0.5 * np.array([0.1, 0.2], "f4") - 0.05 * g
    np.testing.assert_allclose(out, 10.0 + w + mom, rtol=1e-6)


def test_optimizer_steps_agree_with_the_formula():
    """Through ``mx.optimizer.SGD`` (the path Module and Trainer take), whichever loops run."""
    rng = np.random.default_rng(2)
    w0, g = rng.standard_normal((64, 32)).astype("f4"), rng.standard_normal((64, 32)).astype("f4")
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-3, rescale_grad=0.5)
    weight, grad = mx.nd.array(w0), mx.nd.array(g)
    state = opt.create_state(0, weight)
    w, mom = w0.astype(np.float64), np.zeros_like(w0, np.float64)
    for _ in range(3):
        opt.update(0, weight, grad, state)
        mom = 0.9 * mom - 0.1 * 1e-3 * w - 0.1 * (0.5 * g)
        w = w + mom
    np.testing.assert_allclose(weight.asnumpy(), w, rtol=1e-5, atol=1e-6)
