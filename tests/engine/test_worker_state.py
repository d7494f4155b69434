"""engine.base.worker_state: the compiled ``thread_state.WorkerState`` (C thread storage) behaves
as its pure twin, a ``threading.local``, for the two attributes the engines keep there; and the
idle run names its op there while it runs (so a wait inside it is refused) and restores it."""
import sys
import threading

import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.engine import base

pytestmark = pytest.mark.timeout(30)

try:
    from mxref._ext import thread_state
except ImportError:            # not built: only the pure twin is checked
    thread_state = None


def _twins():
    yield pytest.param(threading.local, id="python")
    yield pytest.param(thread_state.WorkerState if thread_state else None, id="cython",
                       marks=pytest.mark.skipif(thread_state is None, reason="thread_state not built"))


@pytest.fixture(params=list(_twins()))
def state(request):
    return request.param()


def test_defaults_are_no_op_and_not_inline(state):
    assert getattr(state, "op_name", None) is None
    assert getattr(state, "inline", False) is False


def test_set_read_and_clear(state):
    state.op_name, state.inline = "elemwise_add", True
    assert (state.op_name, state.inline) == ("elemwise_add", True)
    state.op_name, state.inline = None, False
    assert getattr(state, "op_name", None) is None and getattr(state, "inline", False) is False


def test_each_thread_sees_only_its_own(state):
    state.op_name, state.inline = "main-op", True
    seen, ready, release = {}, threading.Event(), threading.Event()

    def other():
        seen["before"] = (getattr(state, "op_name", None), getattr(state, "inline", False))
        state.op_name, state.inline = "worker-op", True
        ready.set()
        release.wait(10)
        seen["after"] = (state.op_name, state.inline)
        state.op_name, state.inline = None, False

    t = threading.Thread(target=other)
    t.start()
    assert ready.wait(10)
    assert (state.op_name, state.inline) == ("main-op", True)     # the other's set is its own
    release.set()
    t.join(10)
    assert seen == {"before": (None, False), "after": ("worker-op", True)}
    assert (state.op_name, state.inline) == ("main-op", True)
    state.op_name, state.inline = None, False


@pytest.mark.skipif(thread_state is None, reason="thread_state not built")
def test_the_compiled_state_holds_one_reference_and_drops_it():
    state = thread_state.WorkerState()
    name = "".join(["an-op-", "name"])           # a fresh string: its count is this test's alone
    before = sys.getrefcount(name)
    state.op_name = name
    assert sys.getrefcount(name) == before + 1
    state.op_name = "another"
    assert sys.getrefcount(name) == before
    del state.op_name
    assert state.op_name is None
    state.op_name = name
    del state                                    # the owning thread's name goes with the state
    assert sys.getrefcount(name) == before


@pytest.mark.skipif(thread_state is None, reason="thread_state not built")
def test_only_the_two_attributes_exist_on_the_compiled_state():
    with pytest.raises(AttributeError):
        thread_state.WorkerState().other = 1


def test_the_idle_run_names_its_op_and_restores_the_outer_name():
    """An op run on the pushing thread sees its own name in ``worker_state`` (a wait inside it is
    refused with that name), and the name outside is the one set before the push."""
    eng = mx.engine.get()
    seen = []

    def fn(rctx):
        seen.append(base.worker_state.op_name)
        try:
            base.check_not_in_worker("a wait")
        except MXNetError as exc:
            seen.append(str(exc))

    fn.may_run_inline = True
    var = eng.new_variable()
    eng.wait_for_all()
    base.worker_state.op_name = None
    idle = getattr(eng, "_idle", None)
    runs = idle.runs if idle is not None else None
    eng.push_sync(fn, mx.cpu(), (), (var,), name="probe_op")
    eng.wait_for_var(var)
    assert seen[0] == "probe_op" and "probe_op" in seen[1]
    if idle is not None and idle.enabled:
        assert idle.runs == runs + 1            # it did run on this thread, idle
    assert getattr(base.worker_state, "op_name", None) is None
