"""Imperative dispatch: arithmetic semantics, out=/in-place, call-time vs wait-time errors, resources,
auxiliary states, the training flag and the record hook."""
import numpy as np
import pytest

import mxref as mx
from mxref.ndarray import imperative
from mxref.ops import registry
from mxref.ops.registry import OpDef, Param, assign


def _scale(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], inputs[0] * params["scale"])


def _fail(octx, params, inputs, outputs, req):
    raise ValueError("kernel exploded")


def _count(octx, params, inputs, outputs, req):
    inputs[1] += 1                      # the auxiliary state: mutated in place
    assign(outputs[0], req[0], inputs[0] + inputs[1])


def _noise(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], octx.rng.random(outputs[0].shape))


def _train_flag(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], float(octx.is_train))
    assign(outputs[1], req[1], -1.0)


def _train_flag_one(octx, params, inputs, outputs, req):
    assign(outputs[0], req[0], float(octx.is_train))


def _two_shapes(params, in_shapes):
    return in_shapes, [in_shapes[0], in_shapes[0]]


def _two_types(params, in_types):
    return in_types, [in_types[0], in_types[0]]


for _op in (
    OpDef("_test_nd_scale", _scale, params={"scale": Param("float", 1.0, "multiplier"),
                                            "mode": Param("str", "a", choices=("a", "b")),
                                            "axes": Param("shape", None)}),
    OpDef("_test_nd_fail", _fail),
    OpDef("_test_nd_count", _count, aux_states=("counter",)),
    OpDef("_test_nd_noise", _noise, resources=("random",)),
    OpDef("_test_nd_train", _train_flag, outputs=("flag", "hidden"), num_visible_outputs=1,
          infer_shape=_two_shapes, infer_type=_two_types),
    OpDef("_test_nd_train_one", _train_flag_one),      # one output: the short path's plan
):
    if not registry.exists(_op.name):
        registry.register(_op)


def test_binary_operators_pick_elemwise_broadcast_or_scalar_ops(any_engine, invoked):
    """Same shapes -> elemwise_*, different -> broadcast_*, numbers -> _*_scalar, 1 - a -> _rminus_scalar."""
    a, b, r = mx.nd.array([[1, 2], [3, 4]]), mx.nd.array([[2, 2], [2, 2]]), mx.nd.array([10, 20])
    results = [a + b, a + r, a + 1, 1 - a, a * b, a / 2, 2 / a, a - r, a ** 2, 2 ** a, a % 3]
    assert invoked == ["elemwise_add", "broadcast_add", "_plus_scalar", "_rminus_scalar", "elemwise_mul",
                     "_div_scalar", "_rdiv_scalar", "broadcast_sub", "_power_scalar", "_rpower_scalar",
                     "_mod_scalar"]
    h = a.asnumpy()
    expected = [h + 2, h + [10, 20], h + 1, 1 - h, h * 2, h / 2, 2 / h, h - [10, 20], h ** 2, 2 ** h, h % 3]
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    np.testing.assert_array_equal((-a).asnumpy(), -h)
    np.testing.assert_array_equal(abs(-a).asnumpy(), h)


def test_comparisons_return_zero_one_in_input_dtype(any_engine):
    a = mx.nd.array([1, 2, 3], dtype="int32")
    for res, want in ((a == 2, [0, 1, 0]), (a != 2, [1, 0, 1]), (a > 1, [0, 1, 1]), (a >= 2, [0, 1, 1]),
                      (a < 3, [1, 1, 0]), (a <= 1, [1, 0, 0]), (a == a, [1, 1, 1])):
        assert res.dtype == np.int32 and res.asnumpy().tolist() == want


def test_inplace_operators_write_the_same_array_and_its_views(any_engine):
    """a += x writes a's own memory (out=a): views see it, the object identity is kept."""
    a = mx.nd.zeros((2, 3))
    view, ident = a[1], id(a)
    for _ in range(5):
        a += 1
    a *= mx.nd.full((2, 3), 2)
    a -= mx.nd.array([1, 1, 1])                 # broadcast into a's shape
    a /= 3
    assert id(a) == ident
    np.testing.assert_allclose(view.asnumpy(), [3, 3, 3])
    with pytest.raises(mx.MXNetError, match="out= array 0 has shape"):
        r = mx.nd.ones((3,))
        r += mx.nd.ones((2, 3))


def test_out_argument_and_hidden_outputs(any_engine):
    x = mx.nd.array([1, 2])
    out = mx.nd.zeros((2,))
    assert mx.nd._internal._test_nd_scale(x, scale=3, out=out) is out
    assert out.asnumpy().tolist() == [3, 6]
    flag = mx.nd._internal._test_nd_train(x)   # one visible output of two
    assert isinstance(flag, mx.nd.NDArray) and flag.shape == (2,)
    with pytest.raises(mx.MXNetError, match="dtype"):
        mx.nd._internal._test_nd_scale(x, out=mx.nd.zeros((2,), dtype="int32"))


def test_call_time_errors_name_op_and_argument(any_engine):
    """Bad shapes, dtypes, unknown arguments, bad values and wrong input counts raise at the call."""
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((3, 2))
    with pytest.raises(mx.MXNetError, match="elemwise_add"):
        mx.nd.elemwise_add(a, b)
    with pytest.raises(mx.MXNetError, match="broadcast_add"):
        a + mx.nd.ones((4,))
    with pytest.raises(mx.MXNetError, match="dtype"):
        a + mx.nd.ones((2, 3), dtype="int32")
    with pytest.raises(mx.MXNetError, match="unknown argument 'foo'"):
        mx.nd.Activation(a, act_type="relu", foo=1)
    with pytest.raises(mx.MXNetError, match="'mode' must be one of"):
        mx.nd._internal._test_nd_scale(a, mode="c")
    with pytest.raises(mx.MXNetError, match="invalid value 'x' for argument 'scale'"):
        mx.nd._internal._test_nd_scale(a, scale="x")
    with pytest.raises(mx.MXNetError, match=r"unknown input\(s\) \['scale'\]"):
        mx.nd._internal._test_nd_scale(a, scale=a)
    with pytest.raises(mx.MXNetError, match=r"got 2 positional inputs, but it takes 1 \(data\)"):
        mx.nd._internal._test_nd_scale(a, a)
    with pytest.raises(mx.MXNetError, match="expects 1 input"):
        imperative.invoke_name("_test_nd_scale", [a, a], {})
    with pytest.raises(mx.MXNetError, match="one context"):
        a + mx.nd.ones((2, 3), ctx=mx.cpu(1))
    assert (a + a).asnumpy().sum() == 12        # the engine is fine afterwards


def test_execution_errors_raise_at_the_wait_and_follow_the_data(any_engine):
    """A failing kernel raises at asnumpy/waitall, also for arrays computed from its output, with
    the op's name; waitall reports it once; later unrelated work runs normally."""
    x = mx.nd.ones((2,))
    bad = mx.nd._internal._test_nd_fail(x)     # returns at once: shapes are fine
    child = bad * 2
    with pytest.raises(mx.MXNetError, match="_test_nd_fail.*kernel exploded"):
        child.asnumpy()
    with pytest.raises(mx.MXNetError, match="kernel exploded"):
        bad.wait_to_read()                      # it sticks (MXNet 1.9.1 reads garbage here)
    mx.nd.waitall()                             # but is reported to waitall only once
    assert (x + 1).asnumpy().tolist() == [2, 2]
    mx.nd._internal._test_nd_fail(x)
    with pytest.raises(mx.MXNetError, match="kernel exploded"):
        mx.nd.waitall()
    mx.nd.waitall()                             # reported once


def test_aux_states_are_written_in_order(any_engine):
    """An auxiliary input is a written variable: successive calls see each other's updates."""
    x, counter = mx.nd.zeros((1,)), mx.nd.zeros((1,))
    outs = [mx.nd._internal._test_nd_count(x, counter) for _ in range(4)]
    assert [o.asscalar() for o in outs] == [1, 2, 3, 4] and counter.asscalar() == 4


def test_random_resource_is_reproducible(any_engine):
    """Ops declaring 'random' share the context's generator in push order; seeding replays it."""
    x = mx.nd.zeros((3,))
    mx.random.seed(11)
    first = [mx.nd._internal._test_nd_noise(x).asnumpy() for _ in range(2)]
    mx.random.seed(11)
    again = [mx.nd._internal._test_nd_noise(x).asnumpy() for _ in range(2)]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[0], first[1])


def test_training_flag_and_record_hook(any_engine):
    """Kernels see the thread's training flag; the record hook gets every invoke (for autograd)."""
    x = mx.nd.ones((2,))
    assert mx.nd._internal._test_nd_train(x).asnumpy().tolist() == [0, 0]
    old = imperative.set_is_training(True)
    try:
        assert imperative.is_training()
        assert mx.nd._internal._test_nd_train(x).asnumpy().tolist() == [1, 1]
    finally:
        imperative.set_is_training(old)
    seen = []
    imperative.set_record_hook(lambda op, params, ins, outs: seen.append((op.name, len(ins), len(outs))))
    try:
        x + x
        mx.nd._internal._test_nd_scale(x, scale=2)
    finally:
        imperative.set_record_hook(None)
    assert seen == [("elemwise_add", 2, 1), ("_test_nd_scale", 1, 1)]


def test_training_flag_is_per_thread_and_counted(any_engine):
    """One thread in training mode: its ops see it, another thread's do not; the count of training
    threads (which lets a call skip the thread-local read while no thread trains) goes back to 0."""
    import threading
    x = mx.nd.ones((2,))
    assert imperative._num_training == 0
    seen, entered, release = {}, threading.Event(), threading.Event()

    def trainer():
        old = imperative.set_is_training(True)
        try:
            imperative.set_is_training(True)            # setting it again counts once
            entered.set()
            release.wait(10)
            seen["trainer"] = [mx.nd._internal._test_nd_train_one(x).asnumpy().tolist(),
                               mx.nd._internal._test_nd_train(x).asnumpy().tolist(),
                               imperative.is_training()]
        finally:
            imperative.set_is_training(old)

    t = threading.Thread(target=trainer)
    t.start()
    try:
        assert entered.wait(10)
        assert imperative._num_training == 1
        assert mx.nd._internal._test_nd_train_one(x).asnumpy().tolist() == [0, 0]
        assert mx.nd._internal._test_nd_train(x).asnumpy().tolist() == [0, 0]
        assert not imperative.is_training()
    finally:
        release.set()
        t.join(10)
    assert seen["trainer"] == [[1, 1], [1, 1], True]
    assert imperative._num_training == 0
    assert mx.nd._internal._test_nd_train_one(x).asnumpy().tolist() == [0, 0]


@pytest.mark.usefixtures("tuned_paths")
def test_param_cache_distinguishes_value_types():
    """Equal-hashing values of different types (1, 1.0) are cached under different keys."""
    op = registry.get("_test_nd_scale")
    k1, p1 = imperative.parse_params(op, {"scale": 1})
    k2, p2 = imperative.parse_params(op, {"scale": 1.0})
    assert k1 != k2 and p1 == p2 == {"scale": 1.0, "mode": "a", "axes": None}
    assert imperative.parse_params(op, {"scale": 1})[1] is p1
    key, params = imperative.parse_params(op, {"axes": [2, 3]})   # unhashable: parsed, not cached
    assert key is None and params["axes"] == (2, 3)


def test_ufunc_helpers_take_arrays_or_numbers(any_engine):
    """mx.nd.maximum/subtract/greater/... : arrays broadcast, numbers on either side, two numbers."""
    a, col = mx.nd.array([1, 5, 3]), mx.nd.array([[2], [4]])
    assert mx.nd.maximum(a, 2).asnumpy().tolist() == [2, 5, 3]
    assert mx.nd.maximum(2, a).asnumpy().tolist() == [2, 5, 3]
    assert mx.nd.subtract(10, a).asnumpy().tolist() == [9, 5, 7]
    assert mx.nd.greater(2, a).asnumpy().tolist() == [1, 0, 0]
    assert mx.nd.lesser_equal(3, a).asnumpy().tolist() == [0, 1, 1]
    np.testing.assert_array_equal(mx.nd.add(a, col).asnumpy(), [[3, 7, 5], [5, 9, 7]])
    assert mx.nd.power(2, 3) == 8 and mx.nd.equal(2, 2) == 1.0
    assert mx.nd.true_divide is mx.nd.divide
    with pytest.raises(mx.MXNetError, match="operands must be NDArrays or numbers"):
        mx.nd.add(a, "x")


@pytest.mark.usefixtures("tuned_paths")
def test_pushed_function_drops_its_arrays_once_run(any_engine):
    """The op holds its input and output arrays only until it has run (the engine may keep the
    finished op object around a while); inputs given as a tuple work the same."""
    import gc
    import weakref
    a = mx.nd.ones((4,))
    out = imperative.invoke_name("elemwise_add", (a, a), {})[0]
    pushed = []
    eng = mx.engine.get()
    real_push = eng.push_sync
    eng.push_sync = lambda fn, *args, **kw: (pushed.append(fn), real_push(fn, *args, **kw))
    try:
        b = out * 3
    finally:
        eng.push_sync = real_push
    np.testing.assert_allclose(b.asnumpy(), [6.0] * 4)
    mx.nd.waitall()
    ref = weakref.ref(out)
    del out
    gc.collect()
    assert ref() is None and pushed and pushed[0].arrays is None


def test_ops_without_parameters_ignore_keywords():
    """An operator with no parameters keeps unknown keywords as attributes and ignores them, as
    MXNet's (``broadcast_maximum(a, b, axis=1)`` runs); ops with parameters reject them."""
    a, b = mx.nd.array([0.0]), mx.nd.array([[-1.0, 2.0]])
    np.testing.assert_allclose(mx.nd.broadcast_maximum(a, b, axis=1).asnumpy(), [[0.0, 2.0]])
    s = mx.sym.broadcast_maximum(mx.sym.var("a"), mx.sym.var("b"), axis=1)
    assert s.list_attr() == {"axis": "1"}
    assert s.infer_shape(a=(1,), b=(1, 2))[1] == [(1, 2)]
    with pytest.raises(mx.MXNetError, match="unknown argument 'foo'"):
        mx.nd.sum(b, foo=1)
