"""Engine errors: they travel along the data flow, re-raise at waits with the op's name and
original traceback, stick to failed variables, leave the engine usable, and waits inside ops refuse
to block."""
import threading

import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.engine.base import FnProperty

CPU = mx.cpu()


def _fail(rctx):
    raise ValueError("bad value in kernel")


def test_error_reraised_at_wait_for_var_with_name_and_traceback(engine):
    """wait_for_var raises MXNetError naming the op, with the original exception and traceback."""
    x = engine.new_variable()
    engine.push_sync(_fail, CPU, (), (x,), name="my_failing_op")
    with pytest.raises(MXNetError) as info:
        engine.wait_for_var(x)
    msg = str(info.value)
    assert "my_failing_op" in msg and "bad value in kernel" in msg
    assert "in _fail" in msg                     # the worker-side traceback names the function
    assert isinstance(info.value.__cause__, ValueError)


def test_error_flows_to_dependents_which_are_skipped(engine):
    """Ops reading a failed op's output are skipped and their outputs carry the same error."""
    x, y, z = engine.new_variable(), engine.new_variable(), engine.new_variable()
    ran = []
    engine.push_sync(_fail, CPU, (), (x,), name="producer")
    engine.push_sync(lambda r: ran.append("consumer"), CPU, (x,), (y,), name="consumer")
    engine.push_sync(lambda r: ran.append("independent"), CPU, (), (z,))
    with pytest.raises(MXNetError, match="producer"):
        engine.wait_for_var(y)
    engine.wait_for_var(z)
    assert ran == ["independent"]


def test_an_error_is_reported_once_but_sticks_to_its_variables(engine):
    """After one wait raised it, wait_for_all no longer reports it, but every variable carrying it
    raises at each wait and readers stay skipped (no garbage), until the variable is overwritten."""
    x, y = engine.new_variable(), engine.new_variable()
    engine.push_sync(_fail, CPU, (), (x,), name="producer")
    engine.push_sync(lambda r: None, CPU, (x,), (y,), name="consumer")
    with pytest.raises(MXNetError):
        engine.wait_for_var(x)
    with pytest.raises(MXNetError, match="producer"):
        engine.wait_for_var(y)        # same error, carried by y too
    engine.wait_for_all()             # reported already: nothing pending globally
    ran = []
    engine.push_sync(lambda r: ran.append(1), CPU, (y,), ())
    engine.wait_for_all()
    assert ran == []                  # y still carries the error: its reader is skipped
    engine.push_sync(lambda r: None, CPU, (), (y,), name="overwrite")
    engine.push_sync(lambda r: ran.append(2), CPU, (y,), ())
    engine.wait_for_all()
    assert ran == [2]


def test_wait_for_all_raises_first_error_and_clears_all(engine):
    """wait_for_all raises the error once (skipped ops add none); the next wait_for_all is clean;
    the failed variable still raises."""
    a, b = engine.new_variable(), engine.new_variable()
    engine.push_sync(_fail, CPU, (), (a,), name="first_op")
    x = []
    engine.push_sync(lambda r: x.append(1), CPU, (a,), (b,))     # skipped: reads a failed var
    engine.push_sync(_fail, CPU, (b,), (engine.new_variable(),), name="second_op")  # skipped too
    with pytest.raises(MXNetError, match="first_op"):
        engine.wait_for_all()
    engine.wait_for_all()
    with pytest.raises(MXNetError, match="first_op"):
        engine.wait_for_var(a)      # reported, but a still carries it
    assert x == []


def test_no_skip_op_runs_despite_error(engine):
    """NO_SKIP ops run even when an input carries an error."""
    x, ran = engine.new_variable(), []
    engine.push_sync(_fail, CPU, (), (x,))
    engine.push_sync(lambda r: ran.append("cleanup"), CPU, (x,), (), FnProperty.NO_SKIP)
    with pytest.raises(MXNetError):
        engine.wait_for_all()
    assert ran == ["cleanup"]


def test_engine_usable_after_error(engine):
    """After an error was raised, the same variables accept new work that succeeds."""
    x, box = engine.new_variable(), {}
    engine.push_sync(_fail, CPU, (), (x,))
    with pytest.raises(MXNetError):
        engine.wait_for_var(x)
    engine.push_sync(lambda r: box.__setitem__("v", 5), CPU, (), (x,))
    engine.wait_for_var(x)
    assert box == {"v": 5}


def test_async_on_complete_with_exception(engine):
    """An async op reporting failure through on_complete(exc) is an op error like a raise."""
    x = engine.new_variable()
    engine.push_async(lambda r, done: done(RuntimeError("network down")), CPU, (), (x,), name="pull")
    with pytest.raises(MXNetError, match="pull.*network down"):
        engine.wait_for_var(x)


def test_wait_inside_an_op_raises_instead_of_deadlocking(engine):
    """A blocking wait called from inside a running op raises a clear error (no deadlock)."""
    x, y = engine.new_variable(), engine.new_variable()

    def bad(rctx):
        engine.wait_for_var(y)
    engine.push_sync(bad, CPU, (), (x,), name="waits_inside")
    with pytest.raises(MXNetError, match="from inside engine operation 'waits_inside'"):
        engine.wait_for_var(x)

    def bad_all(rctx):
        engine.wait_for_all()
    engine.push_sync(bad_all, CPU, (), (x,), name="waitall_inside")
    with pytest.raises(MXNetError, match="would deadlock"):
        engine.wait_for_var(x)


def test_foreign_variable_rejected(threaded):
    """Pushing a variable that does not belong to the threaded engine raises MXNetError."""
    with pytest.raises(MXNetError, match="not a variable of the threaded engine"):
        threaded.push_sync(lambda r: None, CPU, (object(),), ())
    assert threaded.num_pending() == 0


def test_error_in_one_of_many_concurrent_ops(threaded):
    """Among many concurrent ops, exactly the failing chain carries the error."""
    vs = [threaded.new_variable() for _ in range(20)]
    for i, v in enumerate(vs):
        threaded.push_sync(_fail if i == 13 else (lambda r: None), CPU, (), (v,), name=f"op{i}")
    for i, v in enumerate(vs):
        if i == 13:
            with pytest.raises(MXNetError, match="op13"):
                threaded.wait_for_var(v)
        else:
            threaded.wait_for_var(v)
    threaded.wait_for_all()


def test_wait_for_var_from_plain_thread_is_allowed(threaded):
    """Only engine worker threads are refused; other user threads may wait."""
    x, errors = threaded.new_variable(), []
    threaded.push_sync(lambda r: None, CPU, (), (x,))

    def waiter():
        try:
            threaded.wait_for_var(x)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    t = threading.Thread(target=waiter)
    t.start()
    t.join(10)
    assert not t.is_alive() and errors == []
