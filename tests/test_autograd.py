"""mx.autograd: recording and training flags, backward/grad semantics, grad_req, errors, memory.

Expected values were checked against MXNet 1.9.1 (``mxnet.autograd``) where noted.
"""
import gc
import threading
import weakref

import numpy as np
import pytest

import mxref as mx
from mxref import autograd as ag
from mxref import engine, nd


@pytest.fixture(params=["NaiveEngine", "ThreadedEnginePerDevice"])
def any_engine(request):
    """Run the test under each engine, then restore the previous one."""
    old = engine.get().name
    engine.set_engine(request.param)
    yield request.param
    engine.get().wait_for_all()
    engine.set_engine(old)


def _var(values, grad_req="write", dtype="float32"):
    x = nd.array(np.asarray(values, dtype=np.float64), dtype=dtype)
    x.attach_grad(grad_req)
    return x


# ---------------------------------------------------------------------------------------------
# Flags and scopes
# ---------------------------------------------------------------------------------------------

def test_scopes_set_recording_and_training_like_mxnet():
    """record() turns on both flags; pause() turns both off; train/predict_mode touch training only."""
    assert (ag.is_recording(), ag.is_training()) == (False, False)
    with ag.record():
        assert (ag.is_recording(), ag.is_training()) == (True, True)
        with ag.pause():
            assert (ag.is_recording(), ag.is_training()) == (False, False)
        with ag.pause(train_mode=True):
            assert (ag.is_recording(), ag.is_training()) == (False, True)
        with ag.predict_mode():
            assert (ag.is_recording(), ag.is_training()) == (True, False)
        assert (ag.is_recording(), ag.is_training()) == (True, True)
    with ag.record(train_mode=False):
        assert (ag.is_recording(), ag.is_training()) == (True, False)
    with ag.train_mode():
        assert (ag.is_recording(), ag.is_training()) == (False, True)
    assert (ag.is_recording(), ag.is_training()) == (False, False)


def test_set_recording_and_set_training_return_previous_state():
    """set_recording/set_training return the old flag (MXNet 1.9.1: False True False True)."""
    got = (ag.set_recording(True), ag.set_recording(False), ag.set_training(True), ag.set_training(False))
    assert got == (False, True, False, True)
    assert nd.is_training() is False


def test_scope_restores_flags_after_an_exception():
    """Leaving record() by an exception still restores both flags."""
    with pytest.raises(ValueError):
        with ag.record():
            raise ValueError("boom")
    assert (ag.is_recording(), ag.is_training()) == (False, False)


def test_recording_is_per_thread():
    """Operations run on another thread while this one records are not recorded."""
    x = _var([1.0, 2.0])
    seen = {}

    def other():
        seen["flag"] = ag.is_recording()
        seen["entry"] = (x * 2)._ag

    with ag.record():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert (x * 2)._ag is not None
    assert seen == {"flag": False, "entry": None}


# ---------------------------------------------------------------------------------------------
# backward basics
# ---------------------------------------------------------------------------------------------

def test_attach_grad_defaults_to_write_with_zero_buffer():
    """attach_grad makes a zero .grad of the same shape/dtype; arrays without it have grad None."""
    x = _var([[1.0, 2.0, 3.0]], dtype="float64")
    assert x.grad.shape == (1, 3) and x.grad.dtype == np.float64
    assert x.grad.asnumpy().tolist() == [[0, 0, 0]]
    assert nd.ones((2,)).grad is None


def test_backward_of_square(any_engine):
    """d/dx sum(x*x) = 2x, under both engines."""
    x = _var([1.0, 2.0, 3.0])
    with ag.record():
        y = x * x
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4, 6])


def test_head_grads_scale_the_gradient():
    """backward(out_grad) uses it as dL/dy."""
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * x
    y.backward(nd.array([10.0, -1.0]))
    np.testing.assert_allclose(x.grad.asnumpy(), [20, -4])


def test_multiple_heads_sum_their_gradients():
    """backward([a, b], [ga, gb]) accumulates both (MXNet 1.9.1 gives [8, 10])."""
    x = _var([1.0, 2.0])
    with ag.record():
        a = x * x
        b = x * 3
    ag.backward([a, b], [nd.ones((2,)), nd.array([2.0, 2.0])])
    np.testing.assert_allclose(x.grad.asnumpy(), [8, 10])


def test_head_grad_of_wrong_shape_raises():
    """A head gradient whose shape differs from the head's raises (MXNet silently reads garbage)."""
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * 2
    with pytest.raises(mx.MXNetError, match=r"head gradient 0 has shape \(3,\)"):
        y.backward(nd.ones((3,)))


def test_variable_used_twice_gets_the_sum():
    """x used by several ops: the gradient pass sums the contributions."""
    x = _var([3.0])
    with ag.record():
        y = x * x + x * 4 + nd.exp(x * 0)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [10])


def test_backward_of_a_marked_variable_itself():
    """A marked variable is its own head: its gradient is the head gradient (ones)."""
    x = _var([1.0, 2.0])
    x.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [1, 1])


def test_grad_req_write_overwrites_and_add_accumulates():
    """'write' replaces .grad at every backward; 'add' sums over backward calls (MXNet: [4, 8])."""
    w, a = _var([1.0, 2.0]), _var([1.0, 2.0], grad_req="add")
    for _ in range(2):
        with ag.record():
            y = w * w + a * a
        y.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [2, 4])
    np.testing.assert_allclose(a.grad.asnumpy(), [4, 8])


def test_grad_req_null_is_skipped_and_alone_raises():
    """A 'null' variable gets no gradient; if nothing else needs one, backward raises like MXNet."""
    x, n = _var([1.0, 2.0]), _var([5.0, 5.0], grad_req="null")
    with ag.record():
        y = x * n
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [5, 5])
    assert n.grad.asnumpy().tolist() == [0, 0]
    with ag.record():
        z = n * 2
    with pytest.raises(mx.MXNetError, match="no inputs in computation graph that require gradients"):
        z.backward()


def test_unreached_variable_keeps_its_gradient():
    """A marked variable the heads do not depend on is left alone by backward."""
    x, u = _var([1.0, 2.0]), _var([1.0, 2.0])
    u.grad[:] = 5
    with ag.record():
        y = x * 2
    y.backward()
    assert u.grad.asnumpy().tolist() == [5, 5]


def test_blocked_gradient_writes_zeros():
    """A variable reached only through BlockGrad gets a zero gradient written."""
    x = _var([1.0, 2.0])
    x.grad[:] = 7
    with ag.record():
        y = nd.BlockGrad(x) * 3
    y.backward()
    assert x.grad.asnumpy().tolist() == [0, 0]


def test_mark_variables_uses_the_given_buffers():
    """mark_variables(vars, grads, reqs) makes .grad the given arrays; lengths must match."""
    x, gx = nd.array([1.0, 2.0]), nd.zeros((2,))
    ag.mark_variables([x], [gx])
    assert x.grad is gx
    with ag.record():
        y = x * x
    y.backward()
    np.testing.assert_allclose(gx.asnumpy(), [2, 4])
    with pytest.raises(mx.MXNetError, match="must match"):
        ag.mark_variables([x, x], [gx])
    with pytest.raises(mx.MXNetError, match="grad_req must be one of"):
        x.attach_grad(grad_req="foo")
    with pytest.raises(mx.MXNetError, match="stype"):
        x.attach_grad(stype="coo")


def test_backward_train_mode_is_what_backward_ops_see():
    """backward(train_mode=...) sets the training flag while the backward ops run, then restores it."""
    seen = []

    class Spy(ag.Function):
        def forward(self, x):
            return x * 1

        def backward(self, dy):
            seen.append(ag.is_training())
            return dy

    for mode in (True, False):
        x = _var([1.0])
        with ag.record():
            y = Spy()(x)
        y.backward(train_mode=mode)
    assert seen == [True, False] and not ag.is_training()


# ---------------------------------------------------------------------------------------------
# Errors MXNet raises
# ---------------------------------------------------------------------------------------------

def test_backward_of_unrecorded_result_raises():
    """backward() on an array computed outside record() raises."""
    x = _var([1.0])
    y = x * 2
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        y.backward()


def test_ops_on_constants_only_are_not_recorded():
    """As in MXNet 1.x, an op none of whose inputs is in a graph records nothing."""
    c = nd.array([1.0, 2.0])
    with ag.record():
        y = c * 2
    assert y._ag is None
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        y.backward()


def test_second_backward_without_retain_graph_raises():
    """The graph is freed by backward unless retain_graph=True."""
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * x
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4])
    with pytest.raises(mx.MXNetError, match="retain_graph=True"):
        y.backward()


def test_freed_result_used_later_is_a_constant():
    """After a backward freed it, a result feeds a new record as a constant (as MXNet does)."""
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * x
    y.backward()
    with ag.record():
        z = y * x
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [1, 4])


def test_inplace_assignment_to_recorded_array_raises():
    """+= on a variable or a recorded result inside record() raises (MXNet's AGInfo check)."""
    x = _var([1.0, 2.0])
    with ag.record():
        with pytest.raises(mx.MXNetError, match="already in a computational graph"):
            x += 1
        y = x * 2
        with pytest.raises(mx.MXNetError, match="already in a computational graph"):
            y += 1


# ---------------------------------------------------------------------------------------------
# Graph surgery: detach, re-marking, pause, views, copies
# ---------------------------------------------------------------------------------------------

def test_detach_and_pause_cut_the_graph():
    """detach() shares memory but not history; ops inside pause() are not recorded."""
    x = _var([1.0, 2.0])
    with ag.record():
        d = (x * 2).detach()
        with ag.pause():
            p = x * 3
        y = x * d + x * p
    assert d._ag is None and p._ag is None
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2 + 3, 4 + 6])


def test_attach_grad_on_a_result_makes_it_a_leaf():
    """attach_grad on a recorded result starts a new graph there."""
    x = _var([1.0, 2.0])
    with ag.record():
        h = x * 3
    h.attach_grad()
    with ag.record():
        y = h * h
    y.backward()
    np.testing.assert_allclose(h.grad.asnumpy(), [6, 12])
    assert x.grad.asnumpy().tolist() == [0, 0]


def test_views_and_copies_are_recorded():
    """x[i], x[a:b], reshape and copy() under record carry gradients (MXNet 1.9.1 values)."""
    x = nd.arange(6).reshape((2, 3))
    x.attach_grad()
    with ag.record():
        y = x[1]
        z = x.reshape((3, 2))[0:2]
        w = (y * 2).sum() + (z * z).sum()
    w.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [[0, 2, 4], [8, 2, 2]])
    v = _var([1.0, 2.0])
    with ag.record():
        c = v.copy()
        r = v[-1]
        u = c * c + r
    u.backward()
    np.testing.assert_allclose(v.grad.asnumpy(), [2, 4 + 2])   # r broadcasts over 2 elements


def test_index_out_of_range_under_record_raises():
    """x[i] with i outside [-n, n) raises IndexError while recording too."""
    x = _var([[1.0, 2.0], [3.0, 4.0]])
    with ag.record():
        with pytest.raises(IndexError):
            x[-3]
        with pytest.raises(IndexError):
            x[2]
        y = x[-2] * 1
    y.backward()
    assert x.grad.asnumpy().tolist() == [[1, 1], [0, 0]]


def test_views_outside_record_stay_plain():
    """Outside record() a view is an unrecorded view that writes through."""
    x = _var([[1.0, 2.0], [3.0, 4.0]])
    row = x[0]
    row[:] = 9
    assert row._ag is None and x.asnumpy()[0].tolist() == [9, 9]


# ---------------------------------------------------------------------------------------------
# grad()
# ---------------------------------------------------------------------------------------------

def test_grad_returns_new_arrays_and_leaves_dot_grad():
    """grad() returns a list of gradients; x.grad is not touched."""
    x = _var([1.0, 2.0])
    with ag.record():
        y = nd.sin(x)
    g = ag.grad(y, x)
    assert isinstance(g, list) and len(g) == 1
    np.testing.assert_allclose(g[0].asnumpy(), np.cos([1.0, 2.0]), rtol=1e-6)
    assert x.grad.asnumpy().tolist() == [0, 0]


def test_grad_of_identity_is_a_copy_of_the_head_gradient():
    """When the gradient is the head gradient itself, grad() hands back a copy, not the caller's array."""
    x = _var([1.0, 2.0])
    hg = nd.array([3.0, 4.0])
    (g,) = ag.grad(x, [x], head_grads=[hg])
    assert g is not hg
    np.testing.assert_allclose(g.asnumpy(), [3, 4])


def test_grad_errors_name_the_variable():
    """Unreachable, unmarked and 'null' variables raise MXNet's messages; empty lists raise."""
    x, u, n = _var([1.0]), _var([1.0]), _var([1.0], grad_req="null")
    with ag.record():
        y = x * n
    with pytest.raises(mx.MXNetError, match="2-th variable .*because it is unreachable"):
        ag.grad(y, [x, u], retain_graph=True)
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        ag.grad(y, [nd.ones((1,))], retain_graph=True)
    with pytest.raises(mx.MXNetError, match="1-th variable because it does not require gradient"):
        ag.grad(y, [n], retain_graph=True)
    with pytest.raises(mx.MXNetError, match="empty"):
        ag.grad(y, [])


def test_grad_create_graph_is_recorded_and_retains_the_graph():
    """With create_graph the gradient is itself a recorded result and the forward graph is kept."""
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * x * 3
        (g,) = ag.grad(y, [x], create_graph=True)
    assert g._ag is not None
    np.testing.assert_allclose(g.asnumpy(), [6, 12])
    y.backward()       # still possible: retain_graph defaulted to create_graph
    np.testing.assert_allclose(x.grad.asnumpy(), [6, 12])


def test_get_symbol_returns_the_recorded_graph():
    """get_symbol(y) is a Symbol over the recorded nodes; unrecorded arrays raise."""
    x = _var([1.0, 2.0])
    with ag.record():
        y = nd.relu(x * 2)
    sym = ag.get_symbol(y)
    assert sym.list_arguments() == ["var0"]
    assert '"op": "relu"' in sym.tojson() and '"_mul_scalar"' in sym.tojson()
    with pytest.raises(mx.MXNetError, match="not part of a computation graph"):
        ag.get_symbol(nd.ones((1,)))


# ---------------------------------------------------------------------------------------------
# Memory: only what backward reads is kept, and it is dropped by backward
# ---------------------------------------------------------------------------------------------

def test_values_backward_does_not_read_are_not_kept():
    """h = x + 1 feeds a scaling: neither op's backward reads h, so h's memory goes with h."""
    x = _var(np.ones(1000))
    with ag.record():
        h = x + 1
        y = h * 3
    ref = weakref.ref(h._chunk)
    del h
    nd.waitall()      # a queued operation holds its arrays until it has run
    gc.collect()
    assert ref() is None
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 3)


def test_backward_drops_the_values_it_read(any_engine):
    """h is read by the backward of h*h: kept until backward, freed by it (retain_graph=False)."""
    x = _var(np.ones(1000))
    with ag.record():
        h = x * 2
        y = h * h
    ref = weakref.ref(h._chunk)
    del h
    nd.waitall()
    gc.collect()
    assert ref() is not None
    y.backward()
    nd.waitall()
    gc.collect()
    assert ref() is None
    np.testing.assert_allclose(x.grad.asnumpy(), 8)


def test_fresh_grad_flag():
    """_fresh_grad: False after mark_variables, True once a backward writes the gradient, settable;
    a variable cut off by detach() is not refreshed."""
    x, y = mx.nd.ones((2, 2)), mx.nd.ones((2, 2))
    mx.autograd.mark_variables([x, y], [mx.nd.zeros((2, 2)), mx.nd.zeros((2, 2))])
    assert x._fresh_grad is False and y._fresh_grad is False
    with mx.autograd.record():
        (x + 2 + y).backward()
    assert x._fresh_grad and y._fresh_grad
    x._fresh_grad = False
    y._fresh_grad = False
    with mx.autograd.record():
        ((x + 2).detach() + y).backward()
    assert y._fresh_grad and not x._fresh_grad
    assert mx.nd.ones(2)._fresh_grad is False
    with pytest.raises(mx.MXNetError, match="_fresh_grad"):
        mx.nd.ones(2)._fresh_grad = True


def test_attach_grad_defaults_to_the_array_stype():
    """attach_grad() without stype gives the gradient the array's storage type (as MXNet);
    an explicit stype wins; detach keeps the array's stype."""
    for stype in ("default", "csr", "row_sparse"):
        x = mx.nd.zeros((2, 2), stype=stype)
        x.attach_grad()
        assert x.grad.stype == stype and x.detach().stype == stype
        for grad_stype in ("default", "csr", "row_sparse"):
            x.attach_grad(stype=grad_stype)
            assert x.grad.stype == grad_stype
