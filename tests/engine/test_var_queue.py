"""The dependency core: the pure-Python twin and the Cython twin produce identical traces on random
append/complete sequences, both obey the read/write rules, and their blocking queues agree."""
import random
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mxref.engine import var_queue as pure

try:
    from mxref._ext import engine_core as cy
except ImportError:  # pragma: no cover - pure-only environments
    cy = None

TWINS = [pytest.param(pure, id="python"),
         pytest.param(cy, id="cython", marks=pytest.mark.skipif(cy is None, reason="not built"))]
needs_cy = pytest.mark.skipif(cy is None, reason="Cython engine core not built")


def _op(core, name, reads=(), writes=()):
    return core.OprBlock(None, None, tuple(reads), tuple(writes), name=name)


@pytest.mark.parametrize("core", TWINS)
def test_reads_share_writes_exclude(core):
    """read, read, write, read on one var: both reads run at once, the write after both, the last
    read after the write (num_pending_reads / pending_write / WRITE_TRIGGERED rules)."""
    v = core.ThreadedVar()
    r1, r2, w, r3 = (_op(core, n) for n in ("r1", "r2", "w", "r3"))
    assert v.append_read(r1) and v.append_read(r2)
    assert not v.append_write(w)
    assert not v.append_read(r3)
    assert not v.ready_to_read()
    assert v.complete_read() is None           # one reader left
    assert v.complete_read() is w              # the last reader lets the writer go
    assert [o.name for o in v.complete_write()] == ["r3"]
    assert v.version == 1
    assert v.complete_read() is None and v.ready_to_read()


@pytest.mark.parametrize("core", TWINS)
def test_write_write_read_read_write(core):
    """A completed write releases the reads queued right behind it, and stops at the next write."""
    v = core.ThreadedVar()
    w1, w2, r1, r2, w3 = (_op(core, n) for n in ("w1", "w2", "r1", "r2", "w3"))
    assert v.append_write(w1)
    assert not v.append_write(w2)
    assert not v.append_read(r1) and not v.append_read(r2) and not v.append_write(w3)
    assert [o.name for o in v.complete_write()] == ["w2"]
    assert [o.name for o in v.complete_write()] == ["r1", "r2"]
    assert v.complete_read() is None
    assert v.complete_read() is w3
    assert v.complete_write() == [] and v.version == 3 and v.ready_to_read()


@pytest.mark.parametrize("core", TWINS)
def test_wait_counter_plus_one_guard(core):
    """An op's wait counter starts at reads + writes + 1; register releases the guard last."""
    a, b = core.ThreadedVar(), core.ThreadedVar()
    blocker = _op(core, "blocker", writes=[a])
    assert core.register(blocker)
    op = _op(core, "op", reads=[a, b], writes=[core.ThreadedVar()])
    assert op.wait == 4
    assert not core.register(op) and op.wait == 1      # b and the output released; a is not
    assert [o.name for o in core.complete(blocker)] == ["op"] and op.wait == 0


@pytest.mark.parametrize("core", TWINS)
def test_dedup_drops_reads_of_written_vars(core):
    """Duplicates are removed and a var both read and written counts once, as a write."""
    a, b = core.ThreadedVar(), core.ThreadedVar()
    op = core.OprBlock(None, None, (a, b, a), (b, b))
    assert op.const_vars == (a,) and op.mutable_vars == (b,) and op.wait == 3


@pytest.mark.parametrize("core", TWINS)
def test_dedup_of_long_variable_lists(core):
    """Executor segments push hundreds of variables; duplicates are still removed (set-based path)."""
    vs = [core.ThreadedVar() for _ in range(300)]
    op = core.OprBlock(None, None, vs[:200] + vs[:10], vs[150:300] + vs[290:])
    assert op.mutable_vars == tuple(vs[150:300])
    assert op.const_vars == tuple(vs[:150])
    clean = core.OprBlock(None, None, vs[:100], vs[100:300])
    assert clean.const_vars == tuple(vs[:100]) and clean.wait == 301


def _name(released):
    """An op's name, or a retire token (a string) as is."""
    return released if isinstance(released, str) else released.name


def _run_trace(core, seed, nvars=4, steps=120, retire_rate=0.0):
    """Drive one core with random pushes, completions and (with ``retire_rate``) variable
    retirements; return the trace of releases.

    The random choices depend only on the seed and on the trace so far, so two correct twins
    take the same path and must produce the same trace. A retire token must come back exactly
    once, and only when nothing is queued on its variable any more.
    """
    rng = random.Random(seed)
    vs = [core.ThreadedVar() for _ in range(nvars)]
    live, tokens = list(vs), {}          # variables ops may still use; token -> variable
    running, trace, count = [], [], 0

    def finish(op):
        released = core.complete(op)
        trace.append(("done", op.name, sorted(_name(o) for o in released)))
        for o in released:
            if isinstance(o, str):
                v = tokens.pop(o)
                assert v.ready_to_read() and not any(v in r.const_vars or v in r.mutable_vars
                                                     for r in running)
            else:
                running.append(o)

    for _ in range(steps):
        if retire_rate and live and rng.random() < retire_rate:
            v = live.pop(rng.randrange(len(live)))
            token = f"del{vs.index(v)}"
            now = core.retire(v, token)
            trace.append(("retire", token, now))
            if not now:
                tokens[token] = v
        elif running and (rng.random() < 0.45 or count > 40):
            finish(running.pop(rng.randrange(len(running))))
        else:
            reads = [v for v in live if rng.random() < 0.3]
            writes = [v for v in live if rng.random() < 0.25]
            op = core.OprBlock(None, None, tuple(reads), tuple(writes), name=f"op{count}")
            count += 1
            ready = core.register(op)
            trace.append(("push", op.name, ready))
            if ready:
                running.append(op)
        _check_no_conflict(vs, running)
        running.sort(key=lambda o: int(o.name[2:]))
    while running:                                 # drain: everything pushed must finish
        finish(running.pop(0))
        running.sort(key=lambda o: int(o.name[2:]))
    finished = {t[1] for t in trace if t[0] == "done"}
    assert finished == {f"op{i}" for i in range(count)}
    assert tokens == {}                            # every parked retirement came back
    assert all(v.ready_to_read() for v in vs)
    trace.append(("versions", [v.version for v in vs]))
    return trace


def _check_no_conflict(vs, running):
    """No var is written by one running op while another running op touches it."""
    for v in vs:
        writers = [o for o in running if v in o.mutable_vars]
        readers = [o for o in running if v in o.const_vars]
        assert len(writers) <= 1 and not (writers and readers)


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_pure_twin_traces_are_consistent(seed):
    """Random pushes/completions on the pure twin never run conflicting ops and always drain."""
    _run_trace(pure, seed)


@needs_cy
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_pure_and_cython_twins_give_identical_traces(seed):
    """The Cython core releases exactly the same ops at exactly the same steps as the pure twin."""
    assert _run_trace(cy, seed) == _run_trace(pure, seed)


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_pure_twin_retire_traces_are_consistent(seed):
    """With variables retired along the way, every token comes back once, when its var is idle."""
    _run_trace(pure, seed, retire_rate=0.08)


@needs_cy
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_pure_and_cython_twins_retire_identically(seed):
    """Both cores answer retire alike and hand its tokens back at the same completions."""
    assert _run_trace(cy, seed, retire_rate=0.08) == _run_trace(pure, seed, retire_rate=0.08)


@pytest.mark.parametrize("core", TWINS)
def test_retire_an_idle_variable_answers_at_once(core):
    """Nothing queued (fresh, or every op completed): retire says delete now and parks nothing."""
    v = core.ThreadedVar()
    assert core.retire(v, "fresh")
    w = _op(core, "w", writes=[v])
    assert core.register(w)
    assert core.complete(w) == []
    assert core.retire(v, "after")
    assert core.complete(_op(core, "other")) == []


@pytest.mark.parametrize("core", TWINS)
def test_retire_waits_for_every_queued_op(core):
    """Running write, queued read, queued write: the tokens (in retire order) come back with the
    completion of the last of them, not before."""
    v, u = core.ThreadedVar(), core.ThreadedVar()
    w1, r, w2 = _op(core, "w1", writes=[v]), _op(core, "r", reads=[v, u]), _op(core, "w2", writes=[v])
    assert core.register(w1) and not core.register(r) and not core.register(w2)
    assert not core.retire(v, "del-a") and not core.retire(v, "del-b")
    assert [_name(o) for o in core.complete(w1)] == ["r"]
    assert [_name(o) for o in core.complete(r)] == ["w2"]
    assert [_name(o) for o in core.complete(w2)] == ["del-a", "del-b"]
    assert core.retire(v, "again")


@pytest.mark.parametrize("core", TWINS)
def test_retire_waits_for_the_last_of_concurrent_reads(core):
    """Two reads run at once: only the one that completes last hands the token back."""
    v = core.ThreadedVar()
    r1, r2 = _op(core, "r1", reads=[v]), _op(core, "r2", reads=[v])
    assert core.register(r1) and core.register(r2)
    assert not core.retire(v, "del")
    assert core.complete(r2) == []
    assert core.complete(r1) == ["del"]


@pytest.mark.parametrize("core", TWINS)
def test_retire_rejects_a_foreign_variable(core):
    """Only the core's own variables can be retired (MXNetError, as for pushes)."""
    from mxref.base import MXNetError
    with pytest.raises(MXNetError, match="not a variable of the threaded engine"):
        core.retire(object(), "del")


@pytest.mark.parametrize("core", TWINS)
def test_dedup_of_a_variable_read_and_written(core):
    """``a += 1``: the var read and written counts once, as a write (the small-list fast path),
    and repeats within one list collapse to their first occurrence."""
    a, b, c = core.ThreadedVar(), core.ThreadedVar(), core.ThreadedVar()
    op = core.OprBlock(None, None, [a], [a])
    assert op.const_vars == () and op.mutable_vars == (a,) and op.wait == 2
    op = core.OprBlock(None, None, [b, a, b, c], [c, a, c])
    assert op.const_vars == (b,) and op.mutable_vars == (c, a) and op.wait == 4


@pytest.mark.parametrize("core", TWINS)
def test_fifo_queue_push_front_and_blocking_pop(core):
    """FIFO order, push_front jumps the line, and pop blocks until a push from another thread."""
    q = core.FIFOQueue()
    for i in range(100):                 # more than the initial capacity: the ring grows
        q.push(i)
    q.push_front("first")
    assert [q.pop() for _ in range(3)] == ["first", 0, 1] and len(q) == 98
    for _ in range(98):
        q.pop()
    got = []
    t = threading.Thread(target=lambda: got.append(q.pop()))
    t.start()
    time.sleep(0.05)
    assert got == []
    q.push("late")
    t.join(5)
    assert got == ["late"]


@pytest.mark.parametrize("core", TWINS)
def test_priority_queue_is_a_stable_max_heap(core):
    """Higher priority pops first; equal priorities pop in push order; many items grow the heap."""
    q = core.PriorityQueue()
    rng = random.Random(3)
    items = [(rng.randint(-5, 5), i) for i in range(300)]
    for prio, i in items:
        q.push(i, prio)
    got = [q.pop() for _ in items]
    assert got == [i for _, i in sorted(items, key=lambda pi: (-pi[0], pi[1]))]


@needs_cy
def test_cython_var_dealloc_releases_queued_ops():
    """A Cython var freed with blocks still queued drops its references to their ops."""
    import sys
    op = cy.OprBlock(None, None)
    before = sys.getrefcount(op)
    v = cy.ThreadedVar()
    for _ in range(3):
        v.append_write(op)
    assert sys.getrefcount(op) == before + 3
    del v
    assert sys.getrefcount(op) == before


@pytest.mark.parametrize("core", TWINS)
def test_pending_counter(core):
    """The pending counter counts up and down."""
    c = core.PendingCounter()
    assert [c.inc(), c.inc(), c.dec()] == [1, 2, 1] and c.value == 1


@pytest.mark.parametrize("core", TWINS)
def test_an_op_block_keeps_the_reads_dedup_drops(core):
    """``a += 1`` (read and write a) keeps ``a`` out of ``const_vars`` but in ``reads``, in push
    order, so the engine can tell a read-modify-write from an overwrite; a clean op has None."""
    a, b = core.ThreadedVar(), core.ThreadedVar()
    assert core.OprBlock(None, None, (a,), (b,)).reads is None
    blk = core.OprBlock(None, None, (b, a), (a,))
    assert blk.const_vars == (b,) and blk.mutable_vars == (a,) and blk.reads == (b, a)
    blk = core.OprBlock(None, None, [a], [a])
    assert blk.const_vars == () and blk.reads == (a,)
    many = [core.ThreadedVar() for _ in range(40)]
    blk = core.OprBlock(None, None, many, many[:1])
    assert blk.const_vars == tuple(many[1:]) and blk.reads == tuple(many)
