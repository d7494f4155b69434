"""An NDArray whose producing op failed raises at every read, and so does everything computed
from it, until a whole-array write replaces it; a failed bulk or executor segment fails all it
writes; waitall reports every pending error."""
import numpy as np
import pytest

import mxref as mx
from mxref import engine as _engine

pytestmark = pytest.mark.timeout(60)


def _fail_into(arr, name="failing_op"):
    """Push an op that writes ``arr`` and raises (what an asynchronous kernel error looks like)."""
    def fn(rctx):
        raise ValueError(f"{name} broke")
    _engine.get().push_sync(fn, arr.context, (), (arr._chunk.var,), name=name)
    return arr


def test_reading_a_failed_array_raises_every_time(any_engine):
    """asnumpy and wait_to_read raise at each call, never hand back the unwritten memory."""
    y = _fail_into(mx.nd.zeros((3,)))
    for _ in range(2):
        with pytest.raises(mx.MXNetError, match="failing_op"):
            y.asnumpy()
    with pytest.raises(mx.MXNetError, match="failing_op"):
        y.wait_to_read()


def test_an_array_computed_from_a_failed_one_raises(any_engine):
    """z = y + 1 after y's error was raised: z raises too (its op was skipped)."""
    y = _fail_into(mx.nd.zeros((3,)))
    with pytest.raises(mx.MXNetError):
        y.asnumpy()
    z = y + 1
    for _ in range(2):
        with pytest.raises(mx.MXNetError, match="failing_op"):
            z.asnumpy()
    y += 1                      # reads y: still failed
    with pytest.raises(mx.MXNetError, match="failing_op"):
        y.asnumpy()


def test_assigning_the_whole_array_clears_the_error(any_engine):
    """y[:] = 1 writes all of y without reading it: the error is gone, y and its readers work."""
    y = _fail_into(mx.nd.zeros((3,)))
    with pytest.raises(mx.MXNetError):
        y.asnumpy()
    y[:] = 1
    np.testing.assert_array_equal(y.asnumpy(), [1, 1, 1])
    np.testing.assert_array_equal((y + 1).asnumpy(), [2, 2, 2])
    mx.nd.waitall()


def test_assigning_part_of_the_array_keeps_the_error(any_engine):
    """y[0:1] = 1 keeps the rest of the failed value, so y still raises."""
    y = _fail_into(mx.nd.zeros((3,)))
    y[0:1] = 1
    for _ in range(2):
        with pytest.raises(mx.MXNetError, match="failing_op"):
            y.asnumpy()
    mx.nd.waitall()              # the reads reported it already


def test_waitall_reports_both_of_two_pending_errors(any_engine):
    """Two independent failures: waitall raises the first, the second is in ``errors`` and in
    a note; the next waitall is clean; both arrays still raise; new work runs."""
    a = _fail_into(mx.nd.zeros((2,)), "first_op")
    b = _fail_into(mx.nd.zeros((2,)), "second_op")
    with pytest.raises(mx.MXNetError) as info:
        mx.nd.waitall()
    err = info.value
    assert "first_op" in str(err).split("\n")[0]
    assert [("first_op" in str(e), "second_op" in str(e)) for e in err.errors] == [(True, False),
                                                                                (False, True)]
    assert any("second_op" in note for note in err.__notes__)
    mx.nd.waitall()
    for arr, name in ((a, "first_op"), (b, "second_op")):
        with pytest.raises(mx.MXNetError, match=name):
            arr.asnumpy()
    np.testing.assert_array_equal((mx.nd.ones((2,)) * 3).asnumpy(), [3, 3])


def test_a_failed_imperative_bulk_fails_every_output(any_engine):
    """Inside mx.engine.bulk, an op failing fails the bulk (threaded engine): arrays computed in
    it before and after the failure raise at every read. The naive engine runs each op at push,
    so there only the failed op and what reads it raise."""
    a = mx.nd.ones((4,))
    a.wait_to_read()
    with mx.engine.bulk(16):
        before = a * 2
        bad = _fail_into(mx.nd.zeros((4,)), "bulk_victim")
        after = a + 5
        reader = bad + 1
    arrays = [bad, reader] + ([before, after] if any_engine != "NaiveEngine" else [])
    for _ in range(2):
        for arr in arrays:
            with pytest.raises(mx.MXNetError, match="bulk_victim"):
                arr.asnumpy()
    if any_engine == "NaiveEngine":
        np.testing.assert_array_equal(before.asnumpy(), [2] * 4)
        np.testing.assert_array_equal(after.asnumpy(), [6] * 4)
    mx.nd.waitall()              # the reads reported it already


def test_a_failed_executor_segment_fails_every_output(any_engine, monkeypatch):
    """A bulked forward pass (one segment) where the middle node fails: every array the segment
    writes, before and after that node, raises at every read."""
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_INFERENCE", "1")
    x = mx.sym.Variable("x")
    h = mx.sym.relu(x, name="first")
    m = mx.sym.sqrt(h, name="middle")
    out = mx.sym.Group([h, mx.sym.exp(m, name="last")])
    ex = out.simple_bind(mx.cpu(), grad_req="null", x=(3,))
    ex.arg_dict["x"][:] = 4
    (seg,) = ex._fwd_segments
    fn = seg.fns[0]
    k = [n.split(" ")[0] for n in fn.names].index("sqrt")

    def broken(*args):
        raise FloatingPointError("middle node broke")
    fn.calls[k] = (broken, *fn.calls[k][1:])
    ex.forward(is_train=False)
    for _ in range(2):
        for arr in ex.outputs:
            with pytest.raises(mx.MXNetError, match="middle node broke"):
                arr.asnumpy()


def test_an_add_gradient_that_carries_an_error_keeps_it(any_engine):
    """grad_req='add' reads the old gradient: a gradient array whose last write failed stays
    failed after another backward (it is not overwritten with garbage plus the new gradient)."""
    x = mx.sym.Variable("x")
    ex = (x * 2).simple_bind(mx.cpu(), grad_req="add", x=(3,))
    ex.arg_dict["x"][:] = 1
    grad = ex.grad_dict["x"]
    grad[:] = 0
    _fail_into(grad, "grad_writer")
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((3,)))
    for _ in range(2):
        with pytest.raises(mx.MXNetError, match="grad_writer"):
            grad.asnumpy()
    grad[:] = 0                                  # overwritten: accumulates again
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((3,)))
    np.testing.assert_array_equal(grad.asnumpy(), [2, 2, 2])
