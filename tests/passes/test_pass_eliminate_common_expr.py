"""eliminate_common_expr: repeated computations merged at bind (MXNET_ELIMINATE_COMMON_EXPR),
outputs kept distinct by copies; random and other excluded ops never merged."""
import numpy as np
import pytest

import mxref as mx


def _internals(sym, env, **shapes):
    with mx.test_utils.environment({"MXNET_ELIMINATE_COMMON_EXPR": env}):
        ex = sym.simple_bind(ctx=mx.cpu(), **shapes)
    return ex, len(ex.get_optimized_symbol().get_internals())


@pytest.mark.parametrize("make, saved", [
    (lambda a, b: (a + 1) + (a + 2), 0),
    (lambda a, b: (a + b) + (a + b), 1),
    (lambda a, b: ((a + b) * 2) + ((a + b) * 2), 2),
    (lambda a, b: mx.sym.Group([a * (a + 1), a * (a + 1)]), 1),       # two merges, one copy
    (lambda a, b: mx.sym.Group([a * b + b, a * b + b]), 1),
    (lambda a, b: mx.sym.Dropout(a, p=0.5) + mx.sym.Dropout(a, p=0.5), 0),   # random: never
])
def test_savings_and_same_results(make, saved):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = make(a, b)
    shapes = {n: (2, 3) for n in sym.list_arguments()}
    plain, n_plain = _internals(sym, "0", **shapes)
    cse, n_cse = _internals(sym, "1", **shapes)
    assert n_plain - n_cse == saved
    if "dropout" in sym.tojson().lower():
        return
    rng = np.random.RandomState(0)
    feed = {n: mx.nd.array(rng.rand(2, 3)) for n in sym.list_arguments()}
    outs = []
    for ex in (plain, cse):
        ex.forward(is_train=True, **feed)
        ex.backward([mx.nd.ones((2, 3)) for _ in ex.outputs])
        outs.append([o.asnumpy() for o in ex.outputs] + [g.asnumpy() for g in ex.grad_arrays])
    for x, y in zip(*outs):
        np.testing.assert_allclose(x, y, rtol=1e-6)
    if len(cse.outputs) > 1:
        assert "_copy" in cse.get_optimized_symbol().tojson()    # the repeated output is a copy
