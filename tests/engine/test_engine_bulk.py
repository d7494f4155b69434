"""Bulk execution: consecutive push_sync calls are grouped (thread-local size), flushed on size,
context change, other pushes, waits and size changes, and give the same results as unbulked."""
import threading

import numpy as np
import pytest

import mxref as mx
from mxref.base import MXNetError
from mxref.engine.base import FnProperty

CPU = mx.cpu()


def _push_logged(eng, log, tag, ctx=CPU, reads=(), writes=None, **kw):
    """Push an op that records (tag, its run context): ops of one bulk share a run context."""
    writes = writes if writes is not None else (eng.new_variable(),)
    eng.push_sync(lambda r: log.append((tag, r, r.is_bulk)), ctx, reads, writes, name=tag, **kw)


def _groups(log):
    """Tags grouped by shared run context (concurrent bulks may interleave in the log)."""
    groups = []
    for tag, rctx, _ in log:
        for ctx_, tags in groups:
            if ctx_ is rctx:
                tags.append(tag)
                break
        else:
            groups.append((rctx, [tag]))
    return [tags for _, tags in groups]


def test_bulk_groups_up_to_size(threaded):
    """With bulk size 3, seven sync pushes on one var run as bulks of 3, 3 and 1."""
    x, log = threaded.new_variable(), []
    old = threaded.set_bulk_size(3)
    for i in range(7):
        _push_logged(threaded, log, f"op{i}", writes=(x,))
    assert threaded.set_bulk_size(old) == 3          # restoring flushes the partial bulk
    threaded.wait_for_all()
    assert _groups(log) == [["op0", "op1", "op2"], ["op3", "op4", "op5"], ["op6"]]
    assert [b for _, _, b in log] == [True] * 6 + [False]    # a bulk of one is pushed as the op itself


def test_bulk_flush_triggers(threaded):
    """A context change, a push_async, a non-NORMAL prop and a wait each flush the current bulk."""
    log = []
    threaded.set_bulk_size(10)
    try:
        _push_logged(threaded, log, "a")
        _push_logged(threaded, log, "b")
        _push_logged(threaded, log, "c", ctx=mx.cpu(1))                       # context change
        _push_logged(threaded, log, "d", ctx=mx.cpu(1))
        threaded.push_async(lambda r, done: done(), CPU, (), (threaded.new_variable(),))
        _push_logged(threaded, log, "e")
        _push_logged(threaded, log, "f", prop=FnProperty.CPU_PRIORITIZED)     # not bulkable
        _push_logged(threaded, log, "g")
        v = threaded.new_variable()
        _push_logged(threaded, log, "h", writes=(v,))
        threaded.wait_for_var(v)                                              # wait flushes
    finally:
        threaded.set_bulk_size(0)
    threaded.wait_for_all()
    groups = sorted(_groups(log))
    assert groups == [["a", "b"], ["c", "d"], ["e"], ["f"], ["g", "h"]]


def test_bulk_size_is_thread_local(threaded):
    """set_bulk_size on one thread does not bulk another thread's pushes."""
    log = []
    threaded.set_bulk_size(8)
    try:
        t = threading.Thread(target=lambda: [_push_logged(threaded, log, f"t{i}") for i in range(3)])
        t.start()
        t.join(10)
        threaded.wait_for_all()
        assert all(not is_bulk for _, _, is_bulk in log) and len(log) == 3
    finally:
        threaded.set_bulk_size(0)


def test_bulked_results_equal_unbulked(engine):
    """A chain of numpy updates gives identical arrays with and without bulking."""
    def program(bulk):
        a, b = np.arange(6.0), np.ones(6)
        va, vb = engine.new_variable(), engine.new_variable()
        old = engine.set_bulk_size(bulk)
        for i in range(25):
            if i % 3:
                engine.push_sync(lambda r, i=i: np.multiply(a, 1.0 + i / 100, out=a), CPU, (), (va,))
            else:
                engine.push_sync(lambda r: np.add(b, a, out=b), CPU, (va,), (vb,))
        engine.set_bulk_size(old)
        engine.wait_for_all()
        return a, b
    a0, b0 = program(0)
    a1, b1 = program(7)
    np.testing.assert_array_equal(a0, a1)
    np.testing.assert_array_equal(b0, b1)


def test_error_inside_bulk_names_inner_op(threaded):
    """A failure inside a bulk fails the bulk; the error names the inner op that raised."""
    x, ran = threaded.new_variable(), []
    threaded.set_bulk_size(4)
    try:
        threaded.push_sync(lambda r: ran.append(1), CPU, (), (x,), name="fine")
        threaded.push_sync(lambda r: 1 / 0, CPU, (), (x,), name="divide")
        threaded.push_sync(lambda r: ran.append(3), CPU, (), (x,), name="after")
    finally:
        threaded.set_bulk_size(0)
    with pytest.raises(MXNetError, match=r"divide \(in ImperativeBulk\).*ZeroDivisionError"):
        threaded.wait_for_var(x)
    assert ran == [1]


def test_mx_engine_bulk_context_manager():
    """``with mx.engine.bulk(n)`` sets the size for the block and restores the old one."""
    old = mx.engine.set_bulk_size(0)
    try:
        with mx.engine.bulk(5):
            assert mx.engine.set_bulk_size(5) == 5
        assert mx.engine.set_bulk_size(0) == 0
    finally:
        mx.engine.set_bulk_size(old)
