"""The compiled dispatch (``mxref._ext.dispatch_core``): its arithmetic methods and short path give
what the Python methods (``NDArray._binary`` / ``_scalar_only``) and the pure-Python tuned invoke
give, bit for bit, errors included; they hand over to the Python ones whenever another invoke is
selected; and the fields they read by offset are the fields Python reads by name."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd as ag
from mxref.ndarray import imperative
from mxref.ndarray.chunk import Chunk
from mxref.ndarray.ndarray import NDArray

pytestmark = pytest.mark.skipif(imperative._compiled is None,
                                reason="dispatch_core not loaded (not built, or MXREF_ENABLE_EXT=0)")


def _arrays():
    rng = np.random.RandomState(7)
    a = rng.uniform(1, 2, size=(2, 3)).astype(np.float32)
    b = rng.uniform(1, 2, size=(2, 3)).astype(np.float32)
    row = rng.uniform(1, 2, size=(1, 3)).astype(np.float32)
    ints = np.arange(6, dtype=np.int32).reshape(2, 3) + 1
    return a, b, row, ints


# Each case: a function of four NDArrays (a, b, row, ints) returning an NDArray.
CASES = {
    "add": lambda a, b, row, ints: a + b,
    "add_broadcast": lambda a, b, row, ints: a + row,
    "radd_scalar": lambda a, b, row, ints: 2.5 + a,
    "sub": lambda a, b, row, ints: a - b,
    "rsub_scalar": lambda a, b, row, ints: 3 - a,
    "mul_numpy_scalar": lambda a, b, row, ints: a * np.float32(1.5),
    "div": lambda a, b, row, ints: a / b,
    "rdiv_scalar": lambda a, b, row, ints: 2 / a,
    "int_ops": lambda a, b, row, ints: (ints * 3 - ints) + 1,
    "chain": lambda a, b, row, ints: ((a + b) * (a - 1)) / (b + row),
}


def _inplace(a, b, row, ints):
    keep = a
    a += b
    a -= 1
    a *= row
    a /= 2
    ints += 2
    assert a is keep
    return a


CASES["inplace"] = _inplace


def _run(case, compiled: bool):
    old = imperative.use_compiled(compiled)
    try:
        arrays = [mx.nd.array(x, dtype=x.dtype) for x in _arrays()]
        return CASES[case](*arrays).asnumpy()
    finally:
        imperative.use_compiled(old)


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_methods_match_the_python_methods(case):
    got, want = _run(case, True), _run(case, False)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("bad", [
    lambda a, c: a + "one",                # not a number: NotImplemented, then Python's TypeError
    lambda a, c: a + c,                    # shapes that do not broadcast
    lambda a, c: a.__iadd__(c),            # an out= of the wrong shape
    lambda a, c: "two" - a,
])
def test_compiled_methods_fail_as_the_python_methods_fail(bad):
    errors = []
    for compiled in (True, False):
        old = imperative.use_compiled(compiled)
        try:
            a, c = mx.nd.ones((2, 3)), mx.nd.ones((4,))
            with pytest.raises(Exception) as info:
                bad(a, c).wait_to_read()
            np.testing.assert_array_equal(a.asnumpy(), np.ones((2, 3)))   # nothing was written
            errors.append((type(info.value), str(info.value)))
        finally:
            imperative.use_compiled(old)
    assert errors[0] == errors[1]


def test_the_methods_hand_over_when_another_invoke_is_selected(invoked):
    """Installed on NDArray, the Python ones kept; whenever ``imperative.invoke`` is another
    function (the pure-Python twin, the plain paths, a spy), ``a + b`` goes through it."""
    core = imperative._compiled
    assert NDArray.__add__ is core._add and NDArray.__itruediv__ is core._itruediv
    assert set(imperative._PYTHON_METHODS) == set(core.METHODS) | {"Chunk.__del__"}
    assert Chunk.__del__ is core._chunk_del
    assert core.install(NDArray, imperative._numeric_types) is imperative._PYTHON_METHODS  # once only
    a, b = mx.nd.ones((3,)), mx.nd.ones((3,))
    (a + b).wait_to_read()             # the operators' caches are filled: no first-call path below
    (a * 2).wait_to_read()
    invoked.clear()
    np.testing.assert_array_equal((a + b).asnumpy(), [2, 2, 2])
    a *= 2
    np.testing.assert_array_equal((3 - a).asnumpy(), [1, 1, 1])
    assert invoked == ["elemwise_add", "_mul_scalar", "_rminus_scalar"]
    with imperative.plain_paths():     # the plain invoke replaces the spy while the block runs
        np.testing.assert_array_equal((a / 4).asnumpy(), [0.5, 0.5, 0.5])
    assert invoked == ["elemwise_add", "_mul_scalar", "_rminus_scalar"]


def test_autograd_records_through_the_compiled_methods():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with ag.record():
        y = x * x + 1 - x / 2
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.array([1.0, 2.0, 3.0]) - 0.5)


def test_results_of_the_short_path_are_complete_arrays():
    """The short path fills NDArray and Chunk by offset: every field Python reads is set."""
    a, b = mx.nd.ones((2, 2)), mx.nd.ones((2, 2))
    c = a + b
    assert type(c) is NDArray and type(c._chunk) is Chunk
    assert c.shape == (2, 2) and c.dtype == np.float32 and c._offset == 0
    assert c.grad is None and c._ag is None
    assert c._chunk.ctx == a.context and c._chunk.nbytes == 16
    assert c._chunk.var is not a._chunk.var and c._chunk.engine is not None
    np.testing.assert_array_equal(c.asnumpy(), np.full((2, 2), 2, np.float32))
    c[:] = 5                              # and it is writable through the Python paths
    np.testing.assert_array_equal((c + a).asnumpy(), np.full((2, 2), 6, np.float32))


def test_a_view_as_out_writes_only_its_window():
    base = mx.nd.zeros((4, 3))
    window = base[1:3]
    window += mx.nd.ones((2, 3))
    want = np.zeros((4, 3), np.float32)
    want[1:3] = 1
    np.testing.assert_array_equal(base.asnumpy(), want)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_ufunc_kernel_is_called_directly_until_another_kernel_is_registered(compiled):
    """``elemwise_add``'s kernel is ``np.add`` on a written output: the plan remembers the ufunc
    and the call skips the kernel's frame; a fast kernel registered later takes the op back, and
    an explicit ``req`` always goes through the kernel."""
    from mxref.ops import kernels
    old = imperative.use_compiled(compiled)
    try:
        a, b = mx.nd.array([1, 2, 3]), mx.nd.array([10, 20, 30])
        np.testing.assert_array_equal((a + b).asnumpy(), [11, 22, 33])
        plans = [imperative._infer_cache[("elemwise_add", a._shape, a._dtype, b._shape, b._dtype)]]
        assert plans[0].ufunc is np.add
        seen = []

        def spy(octx, params, inputs, outputs, req):
            seen.append(req)
            np.add(*inputs, out=outputs[0])

        entry = kernels.register_kernel("elemwise_add", "cpu", spy, name="test.spy_add")
        try:
            np.testing.assert_array_equal((a + b).asnumpy(), [11, 22, 33])
            assert seen == [("write",)] and all(p.ufunc is None for p in plans)
        finally:
            kernels.unregister_kernel(entry)
        out = mx.nd.array([1, 1, 1])
        imperative.invoke(imperative.registry.get("elemwise_add"), None, {}, [a, b], out=[out],
                          req=["add"])
        np.testing.assert_array_equal(out.asnumpy(), [12, 23, 34])
        np.testing.assert_array_equal((a + b).asnumpy(), [11, 22, 33])
        assert all(p.ufunc is np.add for p in plans)
    finally:
        imperative.use_compiled(old)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_ufuncs_numpy_wants_out_by_keyword_keep_their_kernel(compiled, op):
    """numpy deprecates a positional output for ``maximum``/``minimum``: their plans keep no
    ufunc, so the kernel (``out=``) runs them and no DeprecationWarning is raised."""
    import warnings
    old = imperative.use_compiled(compiled)
    try:
        a, b = mx.nd.array([1, 5, 3]), mx.nd.array([4, 2, 6])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = getattr(mx.nd, op)(a, b).asnumpy()
        np.testing.assert_array_equal(got, getattr(np, op)([1, 5, 3], [4, 2, 6]))
        assert all(plan.ufunc is None for key, plan in imperative._infer_cache.items()
                   if key[0] == f"broadcast_{op}")
    finally:
        imperative.use_compiled(old)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int32", "int64", "uint8",
                                   "bool"])
@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3), (2, 0, 4), (3, 1, 2, 2)])
def test_views_made_in_c_are_the_views_python_makes(dtype, shape):
    """The result's cached view and its handle's buffer (``views.pxi``: built through numpy's C
    API) are what ``np.ndarray(shape, dtype, buffer, offset)`` and ``block[:nbytes]`` make: same
    memory, shape, dtype, strides and flags, writeable, and they keep the pool's block alive.
    (``broadcast_add``: its kernel takes the views; ``a + a`` may run the inner loop on the bare
    memory, ``ufunc_loop.pxi``, and make no view.)"""
    with mx.np_shape(True):             # () and 0 as sizes, not as "unknown"
        a = mx.nd.zeros(shape, dtype=dtype)
        c = mx.nd.broadcast_add(a, a)
        c.wait_to_read()
    handle = c._chunk.handle
    if handle is None:                 # nothing to hold (no bytes): nothing was allocated
        assert c.size == 0
        return
    view, buf = c._np, handle.buffer
    py_buf = handle._block[:handle.size]
    py_view = np.ndarray(c.shape, c.dtype, py_buf, c._offset)
    for got, want in ((buf, py_buf), (view, py_view)):
        assert (got.shape, got.dtype, got.strides) == (want.shape, want.dtype, want.strides)
        assert got.ctypes.data == want.ctypes.data
        assert got.flags["C_CONTIGUOUS"] and got.flags["WRITEABLE"]
        assert got.flags["ALIGNED"] == want.flags["ALIGNED"]
        assert not got.flags["OWNDATA"] and (got.size == 0 or np.shares_memory(got, handle._block))
    np.testing.assert_array_equal(view, np.zeros(shape, dtype) + np.zeros(shape, dtype))
    view[...] = 1                       # the array reads what is written through its view
    np.testing.assert_array_equal(c.asnumpy(), np.ones(shape, dtype))
