"""Backward plans (``mxref/autograd_plan.py``): a graph recorded again with the same structure
replays the plan built for the first one, with the same results as a freshly built plan."""
import threading

import numpy as np
import pytest

import mxref as mx
from mxref import autograd as ag
from mxref import autograd_plan, nd
from mxref.graph import topo_sort

# Plans are the tuned backward's; the plain one (autograd_plain.py) has none.
pytestmark = pytest.mark.usefixtures("tuned_paths")


@pytest.fixture
def no_plans():
    """Start from an empty plan cache; put back whatever was cached before."""
    saved = dict(autograd_plan._plans)
    autograd_plan._plans.clear()
    yield autograd_plan._plans
    autograd_plan._plans.clear()
    autograd_plan._plans.update(saved)


def _var(values, grad_req="write"):
    x = nd.array(np.asarray(values, dtype=np.float32))
    x.attach_grad(grad_req)
    return x


def _mlp_step(x, w, b):
    with ag.record():
        return (nd.relu(nd.FullyConnected(x, w, b, num_hidden=w.shape[0])) * 0.5).sum()


def _grads_fresh(fn):
    """Run ``fn`` with an empty plan cache (the plan is built, not replayed)."""
    saved = dict(autograd_plan._plans)
    autograd_plan._plans.clear()
    try:
        return fn()
    finally:
        autograd_plan._plans.clear()
        autograd_plan._plans.update(saved)


def test_same_structure_replays_one_plan(no_plans, any_engine):
    """Three recordings of the same network reuse one plan; each gets its own gradients."""
    rng = np.random.RandomState(0)
    w, b = _var(rng.randn(4, 3)), _var(rng.randn(4))
    for step in range(3):
        x = nd.array(rng.randn(5, 3).astype(np.float32))
        _mlp_step(x, w, b).backward(nd.array([step + 1.0]))
        assert len(no_plans) == 1
        pre = x.asnumpy() @ w.asnumpy().T + b.asnumpy()
        dh = (pre > 0) * 0.5 * (step + 1.0)
        np.testing.assert_allclose(w.grad.asnumpy(), dh.T @ x.asnumpy(), rtol=1e-5)
        np.testing.assert_allclose(b.grad.asnumpy(), dh.sum(0), rtol=1e-5)


def test_other_parameters_or_wiring_build_another_plan(no_plans):
    """A different op parameter or a different wiring is a different structure."""
    x = _var([1.0, 2.0, 3.0])
    for y_of in (lambda: x * 2, lambda: x * 3, lambda: x * x, lambda: x * 2):
        with ag.record():
            y = y_of()
        y.backward()
    assert len(no_plans) == 3
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 2.0, 2.0])


def test_replay_with_new_shapes_gives_new_shapes(no_plans):
    """Shapes are not part of the structure: a replay infers them again (slice_axis reads its input
    only for the shape, through a stand-in made from the graph at hand)."""
    for n in (4, 6):
        x = _var(np.arange(n * 2).reshape(n, 2))
        with ag.record():
            y = nd.slice_axis(x, axis=0, begin=1, end=3) * 2
        y.backward()
        expect = np.zeros((n, 2))
        expect[1:3] = 2
        np.testing.assert_array_equal(x.grad.asnumpy(), expect)
    assert len(no_plans) == 1


def test_grad_req_add_accumulates_across_replays(no_plans):
    x = _var([1.0, -2.0], grad_req="add")
    for _ in range(3):
        with ag.record():
            y = x * x
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * 2 * np.array([1.0, -2.0]))
    assert len(no_plans) == 1


def test_retain_graph_replays_on_the_same_graph(no_plans):
    x = _var([1.0, 2.0])
    with ag.record():
        y = nd.exp(x)
    y.backward(retain_graph=True)
    first = x.grad.asnumpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), first)
    np.testing.assert_allclose(first, np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(mx.MXNetError, match="retain_graph"):
        y.backward()


def test_grad_variable_order_is_part_of_the_key(no_plans):
    """autograd.grad with the variables in another order gets its gradients in that order."""
    a, b = _var([2.0]), _var([5.0])
    outs = []
    for variables in ([a, b], [b, a], [a, b]):
        with ag.record():
            y = a * b * b
        outs.append([g.asnumpy()[0] for g in ag.grad(y, variables)])
    assert outs == [[25.0, 20.0], [20.0, 25.0], [25.0, 20.0]]
    assert len(no_plans) == 2


def test_multiple_heads_and_head_gradients_replay(no_plans):
    x = _var([1.0, 2.0])
    for k in (1.0, 3.0):
        with ag.record():
            y1, y2 = x * 2, nd.sin(x)
        ag.backward([y1, y2], [nd.array([k, k]), nd.array([1.0, 1.0])])
        np.testing.assert_allclose(x.grad.asnumpy(), 2 * k + np.cos([1.0, 2.0]), rtol=1e-6)
    assert len(no_plans) == 1


class _Scale(mx.autograd.Function):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x * self.k

    def backward(self, dy):
        return dy * self.k


def test_replayed_function_node_runs_the_current_function(no_plans):
    """A replay calls the backward of the Function recorded this time, not the first one's."""
    x = _var([1.0, 1.0])
    for k in (2.0, 7.0):
        with ag.record():
            y = _Scale(k)(x)
        y.backward()
        np.testing.assert_allclose(x.grad.asnumpy(), [k, k])
    assert len(no_plans) == 1


def test_create_graph_replay_matches_a_fresh_plan(no_plans):
    """Second derivatives through a replayed plan equal those of a freshly built one."""
    def second(v):
        x = _var(v)
        with ag.record():
            dy = ag.grad(nd.sin(x) * x, [x], create_graph=True)[0]
        dy.backward()
        return x.grad.asnumpy()
    fresh = _grads_fresh(lambda: second([0.5, 1.5]))
    second([0.1, 0.2])           # builds and caches the plans
    np.testing.assert_array_equal(second([0.5, 1.5]), fresh)
    assert len(no_plans) == 2    # the first-order grad() and the backward of its result


def test_replay_equals_fresh_build_bit_for_bit(no_plans):
    """The plan replayed gives exactly the gradients a freshly built plan gives."""
    rng = np.random.RandomState(3)
    w, b = _var(rng.randn(8, 6)), _var(rng.randn(8))
    x = nd.array(rng.randn(10, 6).astype(np.float32))

    def run():
        _mlp_step(x, w, b).backward()
        return w.grad.asnumpy().copy(), b.grad.asnumpy().copy()
    fresh = _grads_fresh(run)
    run()
    replayed = run()
    for f, r in zip(fresh, replayed):
        np.testing.assert_array_equal(f, r)


def test_tape_order_is_topo_sort_order():
    """The walk over a recorded graph gives topo_sort's order (inputs first, shared nodes once)."""
    x, w = _var([[1.0, 2.0]]), _var([[0.5, -1.0]])
    with ag.record():
        h = x * w
        y = nd.sin(h) + h * x
        z = nd.exp(y) * h
    order, index = autograd_plan.tape_order([z._ag, y._ag])
    assert [id(n) for n in order] == [id(n) for n in topo_sort([z._ag, y._ag])]
    assert index == {id(n): i for i, n in enumerate(order)}


def test_plans_are_bounded_and_threads_share_them(no_plans):
    """More structures than the cache holds forget the oldest; threads differentiating at once
    (each its own graph) all get their own gradients."""
    x = _var([1.0, 2.0])
    for k in range(autograd_plan._MAX_PLANS + 5):
        with ag.record():
            y = x * float(k + 1)
        y.backward()
        np.testing.assert_allclose(x.grad.asnumpy(), [k + 1.0] * 2)
    assert len(no_plans) == autograd_plan._MAX_PLANS
    errors = []

    def work(k):
        try:
            a = _var([float(k)])
            for _ in range(20):
                with ag.record():
                    y = a * a * (k % 3 + 1.0)
                y.backward()
                np.testing.assert_allclose(a.grad.asnumpy(), [2.0 * k * (k % 3 + 1.0)])
        except Exception as exc:       # surfaced below, on the main thread
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
