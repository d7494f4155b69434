"""engine.base.inline_scope: pushes from the scope's thread run on it at once, waits are allowed
there, scopes nest, and Python code inside a running op can use the engine without deadlocking."""
import threading

import pytest

from mxref.base import MXNetError
from mxref.engine.base import in_inline_scope, inline_scope, worker_state

pytestmark = pytest.mark.timeout(30)
THREADED = ["threaded-python", "threaded-cython"]     # kinds of conftest.make_engine


def test_pushes_run_at_once_on_the_calling_thread(engine):
    """Inside the scope a ready op has run when push returns, on this thread; sync and async."""
    var, seen = engine.new_variable(), []
    with inline_scope():
        engine.push_sync(lambda rctx: seen.append(threading.get_ident()), None, (), (var,))
        engine.push_async(lambda rctx, done: (seen.append(threading.get_ident()), done()), None, (var,), ())
        assert seen == [threading.get_ident()] * 2
        engine.wait_for_var(var)
    assert not in_inline_scope()


def test_scopes_nest_and_restore_the_worker_state(engine):
    """The scope clears the worker mark (so waits work) and puts it back on exit, nested or not."""
    worker_state.op_name = "outer-op"
    try:
        with inline_scope():
            assert worker_state.op_name is None and in_inline_scope()
            with inline_scope():
                assert in_inline_scope()
            assert in_inline_scope()
        assert worker_state.op_name == "outer-op" and not in_inline_scope()
    finally:
        worker_state.op_name = None


@pytest.mark.parametrize("kind", THREADED)
def test_python_inside_an_op_pushes_and_waits_with_one_worker(make, kind):
    """An op whose function pushes more ops and waits for them (what a CustomOp's forward does)
    finishes on a one-worker engine; without the scope the wait would be refused or hang."""
    eng = make(kind, cpu_worker_nthreads=1)
    outer, inner, result = eng.new_variable(), eng.new_variable(), []

    def body(rctx):
        with pytest.raises(MXNetError, match="would deadlock"):
            eng.wait_for_var(inner)          # outside the scope a worker may not wait
        with inline_scope():
            for i in range(3):
                eng.push_sync(lambda r, i=i: result.append(i), None, (), (inner,))
            eng.wait_for_var(inner)
            result.append("waited")

    eng.push_sync(body, None, (), (outer,))
    eng.wait_for_var(outer)
    assert result == [0, 1, 2, "waited"]


@pytest.mark.parametrize("kind", THREADED)
def test_an_inline_push_that_is_not_ready_runs_when_its_variable_frees(make, kind):
    """Dependencies still hold in the scope: a read of a variable with a pending write waits for it
    and then runs on the thread that completed the write."""
    eng = make(kind)
    var, gate, order = eng.new_variable(), threading.Event(), []
    eng.push_sync(lambda r: (gate.wait(10), order.append("write")), None, (), (var,))
    with inline_scope():
        eng.push_sync(lambda r: order.append("read"), None, (var,), ())
        assert order == []               # queued behind the write, not run out of order
        gate.set()
        eng.wait_for_all()
    assert order == ["write", "read"]
