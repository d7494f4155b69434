"""Lazy sparse updates (mxref/ops/sparse/optimizer.py): a row_sparse gradient updates only its rows,
exactly as the dense update of those rows alone would."""
import numpy as np
import pytest

import mxref as mx

OPTIMIZERS = [
    ("sgd", {"learning_rate": 0.1, "wd": 0.01}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    ("adam", {"learning_rate": 0.05, "wd": 0.01}),
    ("adagrad", {"learning_rate": 0.1}),
    ("ftrl", {"learning_rate": 0.1, "lamda1": 0.01}),
    ("signum", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
]


def _states_np(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [s.asnumpy() for s in state if s is not None]
    return [state.asnumpy()]


def _run(name, kwargs, weight, grads):
    """Apply ``grads`` (NDArrays) one after another; return the weight and states as numpy."""
    opt = mx.optimizer.create(name, **kwargs)
    w = mx.nd.array(weight)
    state = opt.create_state(0, w)
    for g in grads:
        opt.update(0, w, g, state)
    return w.asnumpy(), _states_np(state)


@pytest.mark.parametrize("name, kwargs", OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
@pytest.mark.parametrize("wstype", ["default", "row_sparse"])
def test_lazy_update_equals_the_dense_update_of_the_touched_rows(name, kwargs, wstype):
    """Two steps with a row_sparse gradient (unsorted, repeated ids) against the dense optimizer run
    on the touched rows only; untouched rows of the weight and of every state keep their values."""
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((8, 3)).astype(np.float32)
    rows = np.array([6, 1, 3, 1])
    vals = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(2)]
    grads = [mx.nd.sparse.row_sparse_array((v, rows), shape=(8, 3)) for v in vals]
    opt = mx.optimizer.create(name, **kwargs)
    w = mx.nd.array(weight).tostype(wstype)
    state = opt.create_state(0, w)
    for g in grads:
        opt.update(0, w, g, state)
    got_w, got_states = w.asnumpy(), _states_np(state)

    touched = np.unique(rows)
    summed = []
    for v in vals:      # duplicate ids sum, as row_sparse_array does
        s = np.zeros((touched.size, 3), np.float32)
        np.add.at(s, np.searchsorted(touched, rows), v)
        summed.append(mx.nd.array(s))
    sub_w, sub_states = _run(name, kwargs, weight[touched], summed)
    want = weight.copy()
    want[touched] = sub_w
    assert w.stype == wstype
    np.testing.assert_allclose(got_w, want, rtol=1e-6, atol=1e-7)
    untouched = np.setdiff1d(np.arange(8), touched)
    np.testing.assert_array_equal(got_w[untouched], weight[untouched])
    for got, sub in zip(got_states, sub_states):
        np.testing.assert_allclose(got[touched], sub, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(got[untouched], 0)


def test_lazy_update_false_is_the_dense_update():
    """sgd with momentum and lazy_update=False decays every row, as with a dense zero-filled gradient."""
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((6, 2)).astype(np.float32)
    g = mx.nd.sparse.row_sparse_array((np.ones((1, 2), np.float32), [2]), shape=(6, 2))
    kwargs = {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.1, "lazy_update": False}
    got, _ = _run("sgd", kwargs, weight, [g, g])
    want, _ = _run("sgd", kwargs, weight, [g.tostype("default")] * 2)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    lazy, _ = _run("sgd", dict(kwargs, lazy_update=True), weight, [g, g])
    assert not np.allclose(lazy[0], want[0])       # wd touched row 0 only without laziness
    np.testing.assert_array_equal(lazy[0], weight[0])


def test_sparse_update_op_names():
    """mx.nd.sparse.<x>_update are MXNet's names; an empty gradient changes nothing."""
    w = mx.nd.ones((4, 2))
    hist = mx.nd.zeros((4, 2))
    g = mx.nd.sparse.row_sparse_array((np.full((1, 2), 2.0, np.float32), [3]), shape=(4, 2))
    mx.nd.sparse.adagrad_update(w, g, hist, out=w, lr=0.5, epsilon=1e-7)
    np.testing.assert_allclose(w.asnumpy()[3], 1 - 0.5 * 2 / np.sqrt(4 + 1e-7), rtol=1e-6)
    np.testing.assert_array_equal(w.asnumpy()[:3], 1)
    np.testing.assert_array_equal(hist.asnumpy()[3], 4)
    for fn in (mx.nd.sparse.sgd_update, mx.nd.sparse.adam_update, mx.nd.sparse.ftrl_update,
               mx.nd.sparse.sgd_mom_update):
        assert callable(fn)
    empty = mx.nd.sparse.zeros("row_sparse", (4, 2))
    before = w.asnumpy()
    mx.nd.sparse.sgd_update(w, empty, out=w, lr=1.0, wd=0.5)
    np.testing.assert_array_equal(w.asnumpy(), before)


def test_lazy_sgd_fast_loop_matches_the_numpy_reference():
    """sgd_rows (Cython, in place) gives the bits of the numpy step on the gathered rows."""
    from mxref import _ext
    from mxref.ops.sparse import optimizer as sparse_opt
    if sparse_opt._fast is None:
        pytest.skip("mxref._ext.sparse_kernels is not built")
    rng = np.random.default_rng(4)
    weight = rng.standard_normal((50, 4)).astype(np.float32)
    g = mx.nd.sparse.row_sparse_array((rng.standard_normal((6, 4)).astype(np.float32) * 3,
                                       [40, 2, 7, 19, 33, 8]), shape=(50, 4))
    results = []
    for reference in (False, True):
        w = mx.nd.array(weight)
        if reference:
            with _ext.reference_kernels():
                mx.nd.sparse.sgd_update(w, g, out=w, lr=0.3, wd=0.05, rescale_grad=0.5, clip_gradient=1.0)
        else:
            mx.nd.sparse.sgd_update(w, g, out=w, lr=0.3, wd=0.05, rescale_grad=0.5, clip_gradient=1.0)
        results.append(w.asnumpy())
    np.testing.assert_array_equal(results[0], results[1])
    assert not np.array_equal(results[0], weight)
