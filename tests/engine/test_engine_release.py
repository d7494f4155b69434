"""Finished operations are released at once: a completed op's function (and the arrays it closes
over) is not kept alive by the variable queues while later ops on the same variables wait."""
import gc
import threading
import weakref

from mxref.context import cpu

CPU = cpu(0)


class _Payload:
    """Stands for the arrays an op's function closes over."""


def test_completed_ops_are_freed_while_later_ops_on_their_variable_wait(threaded):
    """A write and a read of x have run; a third op on x blocks. The first two functions' closures
    are already collectable (both dependency cores)."""
    engine = threaded
    x = engine.new_variable()
    gate = threading.Event()
    written, read = _Payload(), _Payload()
    refs = [weakref.ref(written), weakref.ref(read)]
    engine.push_sync(lambda r, p=written: None, CPU, (), (x,), name="write")
    engine.push_sync(lambda r, p=read: None, CPU, (x,), (), name="read")
    done = threading.Event()
    engine.push_async(lambda r, on_complete: (done.set(), threading.Thread(
        target=lambda: (gate.wait(10), on_complete())).start()), CPU, (), (x,), name="held")
    del written, read
    assert done.wait(10)       # both earlier ops have completed: the held op has started
    gc.collect()
    try:
        assert [r() for r in refs] == [None, None]
    finally:
        gate.set()
        engine.wait_for_all()
