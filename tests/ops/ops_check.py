"""Helpers for the tensor operator tests: run one op's numpy kernel; check its gradient graph numerically."""
from __future__ import annotations

from typing import Dict, List

import numpy as np

import mxref.ops  # noqa: F401  (registers every operator)
from mxref.context import cpu
from mxref.graph import Node, NodeEntry, make_node
from mxref.ops import registry
from mxref.ops.registry import OpContext


class _Rng:
    """A private 'random' resource so kernel tests need no engine."""

    kind = "random"

    def __init__(self, seed):
        self.generator = np.random.default_rng(seed)


def run_op(name: str, *arrays, seed: int = 0, req: str = "write", out=None, **params) -> List[np.ndarray]:
    """Parse ``params``, infer output shapes and dtypes, allocate outputs, call the kernel."""
    op = registry.get(name)
    p = op.parse_params(params)
    arrays = [np.asarray(a) for a in arrays]
    _, shapes = op.infer_shape(p, [a.shape for a in arrays])
    _, types = op.infer_type(p, [a.dtype for a in arrays])
    outs = out if out is not None else [np.zeros(s, dtype=t) for s, t in zip(shapes, types)]
    octx = OpContext(ctx=cpu(), resources=[_Rng(seed)] if "random" in op.resources else [])
    registry.get_kernel(op, "cpu")(octx, p, arrays, outs, [req] * len(outs))
    return outs


def _graph(name: str, arrays, params):
    vars_ = [Node(None, f"x{i}") for i in range(len(arrays))]
    node = make_node(name, [NodeEntry(v, 0, 0) for v in vars_], "fwd", attrs=None,
                     params=registry.get(name).parse_params(params))
    return vars_, node


def grad_op(name: str, *arrays, ograds=None, **params) -> List:
    """Gradients of every input of op ``name`` from its gradient graph, given head gradients."""
    from mxref.symbol.eval_numpy import evaluate
    arrays = [np.asarray(a) for a in arrays]
    vars_, node = _graph(name, arrays, params)
    outs = run_op(name, *arrays, **params)
    if ograds is None:
        ograds = [np.ones_like(o) for o in outs]
    heads = [Node(None, f"head{i}") for i in range(len(outs))]
    grads = node.op.gradient(node, [NodeEntry(h, 0, 0) for h in heads])
    feed: Dict = {v: a for v, a in zip(vars_, arrays)}
    feed.update({h: g for h, g in zip(heads, ograds)})
    wanted = [g for g in grads if g is not None]
    values = iter(evaluate(wanted, feed))
    return [next(values) if g is not None else None for g in grads]


def check_numeric_grad(name: str, *arrays, wrt=None, rtol=1e-4, atol=1e-6, eps=1e-6,
                       seed: int = 0, **params) -> None:
    """Compare the symbolic gradient of ``sum(out * w)`` (random ``w``) with central differences."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    rng = np.random.default_rng(seed)
    outs = run_op(name, *arrays, **params)
    weights = [rng.standard_normal(o.shape) for o in outs]

    def loss(xs):
        return sum(float((o * w).sum()) for o, w in zip(run_op(name, *xs, **params), weights))

    sym = grad_op(name, *arrays, ograds=weights, **params)
    for i in (range(len(arrays)) if wrt is None else wrt):
        num = np.zeros_like(arrays[i])
        flat = num.reshape(-1)
        for j in range(arrays[i].size):
            xs = [a.copy() for a in arrays]
            xs[i].reshape(-1)[j] += eps
            up = loss(xs)
            xs[i].reshape(-1)[j] -= 2 * eps
            flat[j] = (up - loss(xs)) / (2 * eps)
        assert sym[i] is not None, f"{name}: no gradient for input {i}"
        np.testing.assert_allclose(sym[i], num, rtol=rtol, atol=atol,
                                   err_msg=f"{name}: gradient of input {i} (seed {seed})")
