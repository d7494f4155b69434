"""Back-pressure: at most max_pending ops are pending; further pushes block until ops complete,
except pushes from engine worker threads, which never block."""
import threading
import time

import pytest

import mxref as mx
from mxref.base import MXNetError

CPU = mx.cpu()
KINDS = ["threaded-python", "threaded-cython"]


@pytest.mark.parametrize("kind", KINDS)
def test_push_blocks_at_the_bound_and_resumes(make, kind):
    """With max_pending=4 and the first op stuck, the fifth push blocks until work completes."""
    eng = make(kind, max_pending=4)
    gate, pushed = threading.Event(), []
    x = eng.new_variable()

    def pusher():
        eng.push_sync(lambda r: gate.wait(10), CPU, (), (x,))
        pushed.append(0)
        for i in range(1, 10):
            eng.push_sync(lambda r: None, CPU, (), (x,))
            pushed.append(i)
    t = threading.Thread(target=pusher)
    t.start()
    deadline = time.time() + 5
    while len(pushed) < 4 and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    assert len(pushed) == 4 and t.is_alive()        # blocked on the fifth push
    gate.set()
    t.join(10)
    assert not t.is_alive() and len(pushed) == 10
    eng.wait_for_all()
    assert eng.num_pending() == 0


@pytest.mark.parametrize("kind", KINDS)
def test_worker_pushes_never_block(make, kind):
    """An op pushing many ops past the bound completes (blocking it could deadlock the engine)."""
    eng = make(kind, max_pending=2, cpu_worker_nthreads=1)
    x, log = eng.new_variable(), []

    def fan_out(rctx):
        for i in range(20):
            eng.push_sync(lambda r, i=i: log.append(i), CPU, (), (x,))
    eng.push_sync(fan_out, CPU, (), (eng.new_variable(),))
    eng.wait_for_all()
    assert log == list(range(20))


def test_bound_from_environment(monkeypatch, make):
    """MXREF_ENGINE_MAX_PENDING sets the bound (default 65536); a bound below 1 is refused."""
    assert make("threaded-python").max_pending == 65536
    monkeypatch.setenv("MXREF_ENGINE_MAX_PENDING", "17")
    assert make("threaded-python").describe()["max_pending"] == 17
    monkeypatch.setenv("MXREF_ENGINE_MAX_PENDING", "0")
    with pytest.raises(MXNetError, match="MXREF_ENGINE_MAX_PENDING"):
        make("threaded-python")
