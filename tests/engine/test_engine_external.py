"""``push_external``: an operation completed later by someone outside the engine, on every engine.

The caller never asks which engine runs: on the threaded engine the worker goes on while the
work is outside (``completes_later``), on the naive engine the push returns only once it is done.
Either way dependents run after ``done``, and an error passed to ``done`` travels like any other.
"""
import threading

import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.engine.naive import NaiveEngine

CPU = mx.cpu()


def _complete_from_thread(log, value, exc=None):
    """A ``start`` that finishes its work on another thread, as a network reply would."""
    def start(done):
        def later():
            log.append(value)
            done(exc)
        threading.Thread(target=later, daemon=True).start()
    return start


def test_dependents_wait_for_done(engine):
    """A write pushed after an external op on the same variable runs after its ``done``."""
    x = engine.new_variable()
    log = []
    engine.push_external(_complete_from_thread(log, "external"), CPU, (), (x,), name="ext")
    engine.push_sync(lambda r: log.append("next"), CPU, (), (x,), name="next")
    engine.wait_for_var(x)
    assert log == ["external", "next"]


def test_naive_engine_is_done_at_push_and_says_so(engine):
    """``completes_later`` is False only for the naive engine, which finishes the op inside push."""
    assert engine.completes_later is not isinstance(engine, NaiveEngine)
    x = engine.new_variable()
    log = []
    engine.push_external(_complete_from_thread(log, 1), CPU, (), (x,))
    if not engine.completes_later:
        assert log == [1]
    engine.wait_for_var(x)
    assert log == [1]


def test_done_called_inside_start(engine):
    """``start`` may call ``done`` before it returns (the answer was already there)."""
    x = engine.new_variable()
    engine.push_external(lambda done: done(), CPU, (), (x,))
    engine.wait_for_var(x)


def test_error_given_to_done_is_raised_at_the_wait(engine):
    """``done(exc)`` stores the error on the written variables, raised at the next wait."""
    x = engine.new_variable()
    engine.push_external(_complete_from_thread([], 0, ValueError("server said no")), CPU, (), (x,),
                         name="KVStoreDistPush")
    with pytest.raises(MXNetError, match="KVStoreDistPush.*server said no|server said no"):
        engine.wait_for_var(x)


def test_threaded_worker_is_free_while_the_work_is_outside(threaded):
    """While an external op waits, a later independent op still runs on the engine."""
    x, y = threaded.new_variable(), threaded.new_variable()
    release, ran = threading.Event(), threading.Event()

    def start(done):
        threading.Thread(target=lambda: (release.wait(30), done()), daemon=True).start()
    threaded.push_external(start, CPU, (), (x,))
    threaded.push_sync(lambda r: ran.set(), CPU, (), (y,))
    assert ran.wait(30)            # did not wait for the external op
    release.set()
    threaded.wait_for_var(x)
