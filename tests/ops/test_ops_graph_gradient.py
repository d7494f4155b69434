"""Tensor-op gradients composed by the gradient pass over a multi-op graph match central differences."""
import numpy as np

from mxref.graph import Graph, Node, NodeEntry, make_node
from mxref.ops import registry
from mxref.passes.gradient import gradient
from mxref.symbol.eval_numpy import evaluate


def _op(name, inputs, tag, **params):
    node = make_node(name, inputs, tag, params=registry.get(name).parse_params(params))
    return [NodeEntry(node, i, 0) for i in range(node.num_outputs())]


def _build():
    x, w = Node(None, "x"), Node(None, "w")
    xe, we = NodeEntry(x, 0, 0), NodeEntry(w, 0, 0)
    h = _op("broadcast_mul", [xe, we], "mul")[0]
    h = _op("elemwise_add", [h, _op("sqrt", [xe], "sqrt")[0]], "add")[0]
    a, b = _op("SliceChannel", [h], "split", num_outputs=2, axis=1)
    s = _op("sum", [_op("_mul_scalar", [a], "twice", scalar=2.0)[0]], "rows", axis=1)[0]
    m = _op("max", [_op("transpose", [b], "t")[0]], "cols", axis=0)[0]
    c = _op("Concat", [_op("Reshape", [s], "r1", shape=(1, -1))[0],
                       _op("expand_dims", [m], "r2", axis=0)[0]], "cat", num_args=2, dim=1)[0]
    y = _op("dot", [c, _op("_ones", [], "ones", shape=(4, 1), dtype="float64")[0]], "dot")[0]
    return x, w, y


def test_graph_gradient_matches_central_differences():
    """d/dx and d/dw of a graph mixing broadcast, split, reductions, reshapes and dot."""
    x, w, y = _build()
    head = Node(None, "head")
    grads = gradient(Graph([y]), xs=[NodeEntry(x, 0, 0), NodeEntry(w, 0, 0)],
                     ys_out_grad=[NodeEntry(head, 0, 0)]).outputs
    rng = np.random.default_rng(0)
    xv, wv = rng.uniform(0.5, 1.5, (2, 4)), rng.uniform(0.5, 1.5, (1, 4))
    gx, gw = evaluate(grads, {x: xv, w: wv, head: np.ones((1, 1))})

    def f(xa, wa):
        return float(evaluate([y], {x: xa, w: wa})[0].sum())

    eps = 1e-6
    for val, sym, which in ((xv, gx, 0), (wv, gw, 1)):
        num = np.zeros_like(val)
        for j in range(val.size):
            up, down = val.copy(), val.copy()
            up.reshape(-1)[j] += eps
            down.reshape(-1)[j] -= eps
            args_up = (up, wv) if which == 0 else (xv, up)
            args_down = (down, wv) if which == 0 else (xv, down)
            num.reshape(-1)[j] = (f(*args_up) - f(*args_down)) / (2 * eps)
        np.testing.assert_allclose(sym, num, rtol=1e-5, atol=1e-7)
