"""``mx.nd`` programs give bit-identical results whether the threaded engine runs idle-time kernels
on the calling thread, hands every op to its worker, or is replaced by the naive engine."""
import random

import numpy as np
import pytest

import mxref as mx

ENGINES = [("ThreadedEnginePerDevice", True), ("ThreadedEnginePerDevice", False), ("NaiveEngine", None)]


@pytest.fixture
def restore_engine():
    old = mx.engine.get().name
    yield
    mx.engine.set_engine(old)


class _WatchedIdleRunner:
    """Wraps an engine's ``IdleRunner``, noting the name of each op it runs."""

    def __init__(self, idle, here):
        self.idle, self.here = idle, here

    @property
    def enabled(self):
        return self.idle.enabled

    def run(self, fn, ctx, const_vars, mutable_vars, prop=0, name=None):
        done = self.idle.run(fn, ctx, const_vars, mutable_vars, prop, name)
        if done:
            self.here.append(name)
        return done


def _watch_calling_thread_runs(eng, here):
    """Append to ``here`` the name of every op ``eng`` runs on the calling thread (the idle run
    or ``_run_here``)."""
    run_here = eng._run_here
    eng._run_here = lambda blk: (here.append(blk.name), run_here(blk))
    eng._idle = _WatchedIdleRunner(eng._idle, here)
    del eng.push_sync            # the class's push_sync, which asks eng._idle.run


def _program(seed, n_ops=60):
    rng = random.Random(seed)
    return [(rng.choice(["add", "iadd", "mul", "big_copy", "read_big", "big_update", "where"]),
             rng.randrange(4), rng.randrange(4), rng.randrange(4), rng.randrange(1000))
            for _ in range(n_ops)]


def _run(ops, seed):
    """Run one program on the current engine; the numpy values of every array at the end."""
    data = np.random.RandomState(seed)
    xs = [mx.nd.array(data.randn(64).astype(np.float32)) for _ in range(4)]
    big = [mx.nd.array(data.randn(20000, 64).astype(np.float32)) for _ in range(2)]
    for kind, i, j, k, r in ops:
        if kind == "add":
            xs[i] = xs[j] + xs[k]
        elif kind == "iadd":
            xs[i] += xs[j]
        elif kind == "mul":
            xs[i] = xs[j] * 1.5 - xs[k]
        elif kind == "big_copy":          # 5 MB on the worker (a copy is not run inline): ops queue
            big[0].copyto(big[1])
        elif kind == "read_big":
            xs[i] = xs[i] + big[1][r]
        elif kind == "big_update":
            big[0] += 0.25
        else:
            xs[i] = mx.nd.where(xs[j] > 0, xs[k], xs[i])
    return [x.asnumpy() for x in xs] + [b.asnumpy() for b in big]


@pytest.mark.parametrize("seed", range(4))
def test_random_programs_match_bit_for_bit(seed, restore_engine):
    ops = _program(seed)
    results = []
    for name, inline in ENGINES:
        eng = mx.engine.set_engine(name)
        if inline is not None:
            eng.run_inline = inline
        results.append(_run(ops, seed))
    for got in results[1:]:
        for a, b in zip(results[0], got):
            assert a.tobytes() == b.tobytes()


def test_kernels_run_on_the_calling_thread_only_when_the_engine_is_idle(restore_engine):
    eng = mx.engine.set_engine("ThreadedEnginePerDevice")
    eng.run_inline = True
    here = []
    _watch_calling_thread_runs(eng, here)
    a, b = mx.nd.ones((10,)), mx.nd.ones((10,))
    big, target = mx.nd.ones((20000, 64)), mx.nd.zeros((20000, 64))
    mx.nd.waitall()
    here.clear()
    c = a + b                             # idle: on this thread, done at once
    assert here == ["elemwise_add"] and eng.num_pending() == 0
    big.copyto(target)                    # a copy is handed to the worker ...
    d = a + b                             # ... so this one queues behind it
    mx.nd.waitall()
    assert here == ["elemwise_add"]
    assert c.asnumpy().tolist() == d.asnumpy().tolist() == [2.0] * 10


@pytest.mark.parametrize("plain", [False, True])
def test_big_kernels_stay_asynchronous_on_an_idle_engine(plain, restore_engine):
    """An op touching more than ``INLINE_MAX_BYTES`` goes to the worker even when nothing is
    pending, so the caller's Python overlaps it, as MXNet's asynchronous calls do."""
    from mxref.ndarray import imperative

    eng = mx.engine.set_engine("ThreadedEnginePerDevice")
    eng.run_inline = True
    here = []
    _watch_calling_thread_runs(eng, here)
    n = imperative.INLINE_MAX_BYTES // 4            # float32 elements at the limit, all three arrays
    small = mx.nd.ones((n // 3,))
    big = mx.nd.ones((n,))
    mx.nd.waitall()
    with imperative.plain_paths(plain):
        here.clear()
        s = small + small                           # 3 x n/3 x 4 bytes <= the limit: run here
        mx.nd.waitall()
        b = big + big                               # 3 x n x 4 bytes > the limit: on the worker
        mx.nd.waitall()
    assert here == ["elemwise_add"]
    assert s.asnumpy()[0] == 2.0 and b.asnumpy()[0] == 2.0


@pytest.mark.parametrize("compiled", [False, True])
def test_a_kernel_call_reuses_the_op_context_only_without_resources(compiled):
    """Both kernel-call twins hand the kernel the last resource-free ``OpContext`` while the run
    context, context and mode are the same; resources or a new run context make a fresh one."""
    from mxref.engine.base import RunContext
    from mxref.ndarray import imperative

    if compiled:
        if imperative._compiled is None:
            pytest.skip("mxref._ext.dispatch_core is not built")
        call_cls = imperative._compiled.KernelCall
    else:
        call_cls = imperative._KernelCall
    ctx = mx.cpu()
    a, out = mx.nd.ones((3,)), mx.nd.zeros((3,))
    mx.nd.waitall()
    seen = []

    def kernel(octx, params, ins, outs, req):
        seen.append(octx)
        outs[0][:] = ins[0] * 2

    rc1, rc2 = RunContext(ctx), RunContext(ctx)
    for rc, res in ((rc1, ()), (rc1, ()), (rc2, ()), (rc2, ("r",)), (rc2, ("r",))):
        call_cls([a, out], 1, kernel, False, ctx, res, {}, ["write"])(rc)
    assert seen[0] is seen[1] and seen[2] is not seen[1]
    assert seen[3] is not seen[2] and seen[4] is not seen[3] and seen[4].resources == ("r",)
    assert all(o.run_ctx is rc for o, rc in zip(seen, (rc1, rc1, rc2, rc2, rc2)))
    assert out.asnumpy().tolist() == [2.0] * 3
