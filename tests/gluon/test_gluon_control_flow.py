"""HybridBlocks whose hybrid_forward uses F.contrib.foreach / while_loop / cond: hybridized, the
loop is one graph node; the outputs and gradients equal the imperative run's."""
import numpy as np
import pytest

import mxref as mx
from mxref import autograd, gluon

RNG = np.random.RandomState(11)


class ForeachRNN(gluon.HybridBlock):
    """A gluon RNN cell stepped by foreach (its weights are free inputs of the loop body)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = gluon.rnn.RNNCell(5, input_size=3)

    def hybrid_forward(self, F, data, state):
        outs, states = F.contrib.foreach(self.cell, data, [state])
        return outs, states[0]


class WhileDecay(gluon.HybridBlock):
    """Multiply by a learned gain until the sum drops below a bound (at most 6 steps)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.gain = self.params.get("gain", shape=(4,), init=mx.init.Constant(0.6))

    def hybrid_forward(self, F, x, gain):
        outs, final = F.contrib.while_loop(lambda v: F.sum(F.abs(v)) > 0.5,
                                           lambda v: (v * 2, [v * gain]), [x], max_iterations=6)
        return outs, final[0]


class CondBlock(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            # a positive weight: the sign of the input's sum picks the branch
            self.dense = gluon.nn.Dense(3, in_units=4, weight_initializer=mx.init.Constant(0.1))

    def hybrid_forward(self, F, x):
        y = self.dense(x)
        return F.contrib.cond(F.sum(y) > 0, lambda: F.relu(y) * 2,
                              lambda: F.broadcast_sub(F.tanh(y), F.sum(x)))


def _run(block, inputs, hybridize):
    block.hybridize(hybridize)
    arrays = [mx.nd.array(a) for a in inputs]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        outs = block(*arrays)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        loss = sum((o * (i + 1)).sum() for i, o in enumerate(outs))
    loss.backward()
    params = block.collect_params()
    return ([o.asnumpy() for o in outs], [a.grad.asnumpy() for a in arrays],
            {k: p.grad().asnumpy() for k, p in sorted(params.items())})


CASES = [
    (ForeachRNN, [RNG.uniform(-1, 1, (4, 2, 3)), RNG.uniform(-1, 1, (2, 5))]),
    (WhileDecay, [RNG.uniform(-1, 1, (4,))]),
    (CondBlock, [RNG.uniform(0.5, 1, (2, 4))]),
    (CondBlock, [-RNG.uniform(0.5, 1, (2, 4))]),
]


@pytest.mark.parametrize("block_cls,inputs", CASES, ids=["foreach", "while", "cond_then", "cond_else"])
def test_hybridized_equals_imperative(block_cls, inputs):
    mx.random.seed(0)
    block = block_cls()
    block.initialize(mx.init.Uniform(0.5))
    plain = _run(block, inputs, False)
    hybrid = _run(block, inputs, True)
    for a, b in zip(plain[0] + plain[1], hybrid[0] + hybrid[1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    for k in plain[2]:
        np.testing.assert_allclose(hybrid[2][k], plain[2][k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_hybridized_graph_has_one_loop_node():
    block = ForeachRNN()
    block.initialize()
    block.hybridize()
    block(mx.nd.ones((2, 2, 3)), mx.nd.zeros((2, 5)))
    sym = block._cached_graph[1]
    ops = [n.op.name for n in mx.graph.topo_sort(sym._outputs) if n.op is not None]
    assert ops == ["_foreach"]


def test_hybridized_loop_trains():
    """A Trainer step through the hybridized loop moves the cell's weights as the imperative does."""
    results = []
    for hybridize in (False, True):
        mx.random.seed(1)
        block = ForeachRNN()
        block.initialize(mx.init.Uniform(0.5))
        block.hybridize(hybridize)
        trainer = gluon.Trainer(block.collect_params(), "sgd", {"learning_rate": 0.1})
        data, state = mx.nd.array(CASES[0][1][0]), mx.nd.array(CASES[0][1][1])
        with autograd.record():
            out, _ = block(data, state)
            loss = (out * out).sum()
        loss.backward()
        trainer.step(1)
        results.append([p.data().asnumpy() for p in block.collect_params().values()])
    assert len(results[0]) == len(results[1]) == 4
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


class UnusedData(gluon.HybridBlock):
    """Two chained while_loops that never read the block's first input (MXNet's test_uniq_name)."""

    def hybrid_forward(self, F, inputs, states):
        cond = lambda a, b: F.sum(a) < 100            # noqa: E731
        step = lambda a, b: (a + 1, [a * 2, b])       # noqa: E731
        out1, states1 = F.contrib.while_loop(cond, step, [states[0], states[0] + 1], max_iterations=5)
        out, _ = F.contrib.while_loop(cond, step, states1, max_iterations=5)
        return out


def test_block_input_the_graph_never_reads():
    """Hybridized, an input no node reads binds nothing and gets a zero gradient."""
    data, state = mx.nd.ones((2, 5)), mx.nd.array(RNG.uniform(size=(5,)))
    results = []
    for hybridize in (False, True):
        block = UnusedData()
        block.initialize()
        block.hybridize(hybridize)
        data.attach_grad()
        state.attach_grad()
        with autograd.record():
            out = block(data, [state])
        out.backward()
        results.append((out.asnumpy(), data.grad.asnumpy(), state.grad.asnumpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-6)
    assert not results[1][1].any()
