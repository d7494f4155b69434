"""Errors stick to the variables they failed: every wait on a failed variable raises until an op
that does not read it overwrites it, a failed bulk fails all it writes, and wait_for_all reports
every pending error (the first raised, the others attached)."""
import pytest

import mxref as mx
from mxref.base import MXNetError

CPU = mx.cpu()
pytestmark = pytest.mark.timeout(60)


def _fail(rctx):
    raise ValueError("bad value in kernel")


def _fail_other(rctx):
    raise KeyError("missing entry")


def test_a_failed_variable_raises_at_every_wait(engine):
    """The error is not used up by the first wait: each wait_for_var raises it again."""
    x = engine.new_variable()
    engine.push_sync(_fail, CPU, (), (x,), name="producer")
    for _ in range(3):
        with pytest.raises(MXNetError, match="producer.*bad value in kernel"):
            engine.wait_for_var(x)


def test_a_reader_pushed_after_the_error_was_raised_is_skipped(engine):
    """An op reading a failed variable is skipped, also when the error was raised already, and
    what it writes carries the error at every wait."""
    x, y = engine.new_variable(), engine.new_variable()
    ran = []
    engine.push_sync(_fail, CPU, (), (x,), name="producer")
    with pytest.raises(MXNetError):
        engine.wait_for_var(x)
    engine.push_sync(lambda r: ran.append("reader"), CPU, (x,), (y,), name="reader")
    for _ in range(2):
        with pytest.raises(MXNetError, match="producer"):
            engine.wait_for_var(y)
    engine.wait_for_all()          # the error was reported once already: nothing pending
    assert ran == []


def test_a_write_that_does_not_read_clears_the_error(engine):
    """Overwriting a failed variable (an op that writes it without reading it) clears its error;
    its readers run again."""
    x, y, ran = engine.new_variable(), engine.new_variable(), []
    engine.push_sync(_fail, CPU, (), (x,), name="producer")
    engine.push_sync(lambda r: ran.append("overwrite"), CPU, (), (x,), name="overwrite")
    engine.push_sync(lambda r: ran.append("reader"), CPU, (x,), (y,), name="reader")
    engine.wait_for_var(x)
    engine.wait_for_var(y)
    assert ran == ["overwrite", "reader"]
    with pytest.raises(MXNetError, match="producer"):
        engine.wait_for_all()       # the error itself was never raised: it is still reported


def test_a_write_that_also_reads_keeps_the_error(engine):
    """``x += 1`` reads x: it is skipped and x keeps its error (dedup must not hide the read)."""
    x, ran = engine.new_variable(), []
    engine.push_sync(_fail, CPU, (), (x,), name="producer")
    engine.push_sync(lambda r: ran.append("iadd"), CPU, (x,), (x,), name="iadd")
    with pytest.raises(MXNetError, match="producer"):
        engine.wait_for_var(x)
    with pytest.raises(MXNetError, match="producer"):
        engine.wait_for_var(x)
    assert ran == []


def test_a_multi_output_op_reading_one_of_its_outputs(engine):
    """An op reading and writing a and only writing b: skipped when a failed (b gets a's error);
    run when only b failed (b is overwritten and clean)."""
    a, b, ran = engine.new_variable(), engine.new_variable(), []
    engine.push_sync(_fail, CPU, (), (b,), name="b_failed")
    engine.push_sync(lambda r: ran.append(1), CPU, (a,), (a, b), name="rw_a_w_b")
    engine.wait_for_var(b)
    assert ran == [1]
    engine.push_sync(_fail, CPU, (), (a,), name="a_failed")
    engine.push_sync(lambda r: ran.append(2), CPU, (a,), (a, b), name="rw_a_w_b")
    with pytest.raises(MXNetError, match="a_failed"):
        engine.wait_for_var(b)
    assert ran == [1]
    with pytest.raises(MXNetError):
        engine.wait_for_all()


def test_wait_for_all_reports_every_pending_error(engine):
    """Two independent failures: wait_for_all raises one, the other is attached (``errors`` and a
    note each), neither is dropped; the next wait_for_all is clean and the engine is usable."""
    a, b = engine.new_variable(), engine.new_variable()
    engine.push_sync(_fail, CPU, (), (a,), name="first_op")
    engine.push_sync(_fail_other, CPU, (), (b,), name="second_op")
    with pytest.raises(MXNetError) as info:
        engine.wait_for_all()
    err = info.value
    names = {"first_op", "second_op"}
    assert len(err.errors) == 2 and err.errors[0] is err
    assert {n for n in names for e in err.errors if n in str(e)} == names
    other = (names - {n for n in names if n in str(err).split("\n")[0]}).pop()
    assert any(other in note for note in err.__notes__)
    engine.wait_for_all()
    with pytest.raises(MXNetError, match="first_op"):
        engine.wait_for_var(a)          # still carried by the variable
    box = []
    engine.push_sync(lambda r: box.append(1), CPU, (), (a,))
    engine.wait_for_var(a)
    assert box == [1]


def test_skipped_ops_add_no_pending_errors(engine):
    """A chain skipped behind one failure reports that one error once, not one per op."""
    vs = [engine.new_variable() for _ in range(5)]
    engine.push_sync(_fail, CPU, (), (vs[0],), name="root")
    for u, v in zip(vs, vs[1:]):
        engine.push_sync(lambda r: None, CPU, (u,), (v,), name="follower")
    with pytest.raises(MXNetError) as info:
        engine.wait_for_all()
    assert len(info.value.errors) == 1 and not getattr(info.value, "__notes__", None)


@pytest.mark.parametrize("kind", ["threaded-python", "threaded-cython"])
def test_a_failed_bulk_marks_every_output(make, kind):
    """With bulking, one failing op fails the bulk: every variable it writes raises, at every
    wait, including outputs of ops that ran before the failure."""
    eng = make(kind, cpu_worker_nthreads=1)
    outs = [eng.new_variable() for _ in range(4)]
    ran = []
    eng.set_bulk_size(8)
    try:
        eng.push_sync(lambda r: ran.append(0), CPU, (), (outs[0],), name="ok0")
        eng.push_sync(lambda r: ran.append(1), CPU, (outs[0],), (outs[1],), name="ok1")
        eng.push_sync(_fail, CPU, (), (outs[2],), name="bad")
        eng.push_sync(lambda r: ran.append(3), CPU, (), (outs[3],), name="after")
    finally:
        eng.set_bulk_size(0)
    for _ in range(2):
        for v in outs:
            with pytest.raises(MXNetError, match="bad"):
                eng.wait_for_var(v)
    assert ran == [0, 1]


def test_deleting_a_failed_variable_stops_counting_it(engine):
    """Deleted failed variables no longer count as tainted (the check before each op is cheap again)."""
    x = engine.new_variable()
    engine.push_sync(_fail, CPU, (), (x,), name="producer")
    with pytest.raises(MXNetError):
        engine.wait_for_var(x)
    assert engine.errors.tainted == 1
    engine.delete_variable(lambda r: None, CPU, x)
    engine.wait_for_all()
    assert engine.errors.tainted == 0
