"""The inner loop the compiled dispatch calls directly (``mxref/_ext/ufunc_loop.pxi``): for every
ufunc and dtype it takes, the results are numpy's bit for bit (array with array, array with a
scalar on either side, in place); whatever numpy treats differently (overlapping memory, a scalar
out of the dtype's range, other dtypes) goes to numpy; floating-point errors are reported as numpy
reports them, in each ``np.seterr`` mode."""
import warnings

import numpy as np
import pytest

import mxref as mx
from mxref.ndarray import imperative

pytestmark = pytest.mark.skipif(imperative._compiled is None,
                                reason="dispatch_core not loaded (not built, or MXREF_ENABLE_EXT=0)")

DTYPES = ["float16", "float32", "float64", "int8", "int32", "int64", "uint8"]   # mxref's numeric
BINARY = {"elemwise_add": np.add, "elemwise_sub": np.subtract, "elemwise_mul": np.multiply}
# a scalar op (what ``a + s`` and the like dispatch to) -> (ufunc, the scalar's position)
SCALAR = {"_plus_scalar": (np.add, 1), "_minus_scalar": (np.subtract, 1),
          "_rminus_scalar": (np.subtract, 0), "_mul_scalar": (np.multiply, 1)}
SCALAR_CALLS = {"_plus_scalar": lambda a, s: a + s, "_minus_scalar": lambda a, s: a - s,
                "_rminus_scalar": lambda a, s: s - a, "_mul_scalar": lambda a, s: a * s}


def _data(dtype, n=37, seed=0):
    """Values that exercise the loop: random, zeros, the extremes (overflow, wrap-around) and, for
    floats, infinities, NaN and subnormals."""
    rng = np.random.RandomState(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        info = np.finfo(dt)
        x = rng.standard_normal(n).astype(dt) * dt.type(100)
        x[:8] = [0, -0.0, np.inf, -np.inf, np.nan, info.max, info.tiny / 2, -info.max]
    else:
        info = np.iinfo(dt)
        x = rng.randint(info.min, info.max, size=n, dtype=dt)
        x[:3] = [0, info.max, info.min]
    return x


def _plan_loop(name):
    """The loop kept on the (one) cached plan of operator ``name``."""
    loops = [plan.loop for key, plan in imperative._infer_cache.items()
             if key[0] == name or (isinstance(key[0], tuple) and key[0][0] == name)]
    assert loops, f"no plan cached for {name}"
    return loops[-1]


def _second(fn):
    """``fn()`` run twice, the second result (the first call makes the plan; the loop is found
    and kept at the next)."""
    first = fn().asnumpy()
    second = fn().asnumpy()
    _same_bits(second, first)
    return second


def _same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)


@pytest.fixture(autouse=True)
def _fresh_plans():
    imperative._infer_cache.clear()
    yield
    imperative._infer_cache.clear()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_loop_matches_numpy_bit_for_bit(name, dtype):
    x, y = _data(dtype, seed=1), _data(dtype, seed=2)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = mx.nd.array(x, dtype=dtype), mx.nd.array(y, dtype=dtype)
        got = _second(lambda: getattr(mx.nd, name)(a, b))
        want = BINARY[name](x, y)
    _same_bits(got, want)
    loop = _plan_loop(name)
    assert loop and loop.ufunc is BINARY[name] and loop.dtype == np.dtype(dtype) and loop.scalar_at == -1


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(SCALAR))
@pytest.mark.parametrize("scalar", [3.0, 0.5, -2.0])
def test_scalar_loop_matches_numpy_bit_for_bit(name, dtype, scalar):
    x = _data(dtype, seed=3)
    ufunc, at = SCALAR[name]
    if np.dtype(dtype).kind == "u":
        scalar = abs(scalar)            # a negative one is numpy's error (tested below)
    s = int(scalar) if np.dtype(dtype).kind in "iu" else scalar
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = mx.nd.array(x, dtype=dtype)
        got = _second(lambda: SCALAR_CALLS[name](a, scalar))
        want = ufunc(s, x) if at == 0 else ufunc(x, s)
    _same_bits(got, want.astype(dtype))
    loop = _plan_loop(name)
    assert loop and loop.ufunc is ufunc and loop.scalar_at == at


def test_in_place_and_aliased_operands():
    """``a += b``, ``a += a`` and ``a *= 3`` write the memory they read: elementwise, as numpy."""
    x, y = _data("float32", seed=4), _data("float32", seed=5)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = mx.nd.array(x), mx.nd.array(y)
        want = x.copy()
        for _ in range(2):              # the second round runs the loops the first found
            a += b
            a += a
            a *= 3
            want += y
            want += want
            want *= 3
        _same_bits(a.asnumpy(), want)
    assert _plan_loop("elemwise_add") and _plan_loop("_mul_scalar")


def test_partly_overlapping_memory_goes_to_numpy():
    """Two views of one array at different offsets overlap: numpy copies the input first, and so
    does the dispatch (it hands the call to the ufunc)."""
    base = np.arange(12, dtype=np.float32)
    x = mx.nd.array(base)
    want = base.copy()
    for _ in range(2):
        mx.nd.elemwise_add(x[0:8], x[0:8], out=x[2:10])
        np.add(want[0:8], want[0:8], out=want[2:10])
    _same_bits(x.asnumpy(), want)
    assert _plan_loop("elemwise_add")   # the loop exists; this call was not its to make


def test_other_dtypes_take_no_loop():
    a = mx.nd.array(np.ones(4, dtype=bool), dtype="bool")
    got = _second(lambda: a + a)
    np.testing.assert_array_equal(got, np.ones(4, dtype=bool) + np.ones(4, dtype=bool))
    assert _plan_loop("elemwise_add") is False


def test_scalar_out_of_range_is_numpys_error():
    """``uint8 + (-1)``: numpy refuses the scalar (NEP 50); no loop is made and the kernel's numpy
    call reports it, as on the pure-Python path."""
    a = mx.nd.array([1, 2, 3], dtype="uint8")
    for _ in range(2):
        with pytest.raises(Exception) as compiled:
            (a + (-1)).asnumpy()
    assert _plan_loop("_plus_scalar") is False
    imperative._infer_cache.clear()
    old = imperative.use_compiled(False)
    try:
        with pytest.raises(Exception) as python:
            (a + (-1)).asnumpy()
    finally:
        imperative.use_compiled(old)
    assert type(compiled.value) is type(python.value) and "out of bounds" in str(compiled.value)


def test_overflow_warns_as_numpy_does():
    big = np.full(4, np.finfo(np.float32).max, np.float32)
    a = mx.nd.array(big)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        (a + a).wait_to_read()          # numpy's ufunc (the plan is new)
        (a + a).wait_to_read()          # the loop
    assert _plan_loop("elemwise_add")
    msgs = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
    assert msgs == ["overflow encountered in add"] * 2


def _numpy_errors(mode, errcall=None):
    """What numpy does on ``multiply`` giving an overflow and an invalid value, in ``mode``."""
    x = np.array([3e38, 0], np.float32)
    y = np.array([10, np.inf], np.float32)
    return _observe(lambda: np.multiply(x, y), mode, errcall)


def _our_errors(mode, errcall=None):
    from mxref._ext import dispatch_core
    return _observe(lambda: dispatch_core.fp_report("multiply", 2 | 8), mode, errcall)


def _observe(fn, mode, errcall):
    with warnings.catch_warnings(record=True) as seen, np.errstate(all=mode, call=errcall):
        warnings.simplefilter("always")
        try:
            fn()
            raised = None
        except Exception as exc:  # noqa: BLE001 - compared below
            raised = (type(exc), str(exc))
    return [(w.category, str(w.message)) for w in seen], raised


class _Log:
    def __init__(self):
        self.lines = []

    def write(self, msg):
        self.lines.append(msg)


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise", "print"])
def test_fp_report_follows_seterr_like_numpy(mode, capfd):
    ours = _our_errors(mode)
    our_err = capfd.readouterr().err
    theirs = _numpy_errors(mode)
    assert ours == theirs and our_err == capfd.readouterr().err


def test_fp_report_call_and_log_modes_like_numpy():
    got, want = [], []
    assert _our_errors("call", lambda kind, status: got.append((kind, status)))[1] is None
    _numpy_errors("call", lambda kind, status: want.append((kind, status)))
    assert got == want == [("overflow", 10), ("invalid value", 10)]
    ours, theirs = _Log(), _Log()
    _our_errors("log", ours)
    _numpy_errors("log", theirs)
    assert ours.lines == theirs.lines == ["Warning: overflow encountered in multiply\n",
                                          "Warning: invalid value encountered in multiply\n"]


def test_kernel_call_is_an_engine_sync_fn():
    """The idle run calls ``KernelCall.run`` directly (``engine_core.SyncFn``); everything else
    calls the object, which runs the same ``run``; the base class alone has nothing to run."""
    from mxref._ext import dispatch_core, engine_core
    assert issubclass(dispatch_core.KernelCall, engine_core.SyncFn)
    with pytest.raises(NotImplementedError, match="SyncFn does not implement run"):
        engine_core.SyncFn()(None)
