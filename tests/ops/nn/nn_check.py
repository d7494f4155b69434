"""Operator test helpers: run an op forward, evaluate its symbolic gradient, compare numerically."""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence

import numpy as np
import pytest

from mxref.graph import Node, NodeEntry, make_node
from mxref.ops import registry
from mxref.symbol.eval_numpy import evaluate

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "ops_nn")


def build(op_name: str, inputs: Sequence[np.ndarray], **params):
    """A node applying ``op_name`` to fresh variables fed with ``inputs`` (arguments then aux)."""
    op = registry.get(op_name)
    parsed = op.parse_params(params)
    names = op.list_inputs(parsed)
    assert len(names) == len(inputs), f"{op_name} takes {names}"
    variables = [Node(None, n) for n in names]
    node = make_node(op_name, [NodeEntry(v) for v in variables], op_name.lower() + "0",
                     attrs={k: str(v) for k, v in params.items()})
    feed = {v: np.asarray(x) for v, x in zip(variables, inputs)}
    return node, feed


def forward(op_name: str, inputs: Sequence[np.ndarray], is_train: bool = False, seed: int = 0,
            **params) -> List[np.ndarray]:
    """Every output of one forward run (auxiliary inputs are updated in place)."""
    node, feed = build(op_name, inputs, **params)
    entries = [NodeEntry(node, i) for i in range(node.num_outputs())]
    return evaluate(entries, feed, is_train=is_train, seed=seed)


def grads(op_name: str, inputs: Sequence[np.ndarray], ograds: Sequence[np.ndarray] = None,
          is_train: bool = True, seed: int = 0, **params) -> List[Optional[np.ndarray]]:
    """Input gradients from the op's symbolic gradient graph (``None`` where it returns ``None``)."""
    node, feed = build(op_name, [np.array(x, copy=True) for x in inputs], **params)
    heads = []
    for i in range(node.num_outputs()):
        v = Node(None, f"head_grad{i}")
        heads.append(NodeEntry(v))
        if ograds is not None and i < len(ograds):
            feed[v] = ograds[i]
    entries = node.op.gradient(node, heads)
    assert len(entries) == len(inputs), "gradient must return one entry per input"
    live = [e for e in entries if e is not None]
    vals = iter(evaluate(live, feed, is_train=is_train, seed=seed))
    return [None if e is None else next(vals) for e in entries]


def numeric_grads(op_name: str, inputs: Sequence[np.ndarray], ograds: Sequence[np.ndarray],
                  wrt: Sequence[int], is_train: bool = True, seed: int = 0, eps: float = 1e-6,
                  **params) -> List[np.ndarray]:
    """Central differences of ``sum_i <out_i, ograd_i>`` with respect to ``inputs[k]``, k in ``wrt``."""
    def loss(xs):
        outs = forward(op_name, [np.array(x, copy=True) for x in xs], is_train=is_train, seed=seed,
                       **params)
        return sum(float((o * g).sum()) for o, g in zip(outs, ograds))

    result = []
    for k in wrt:
        xs = [np.array(x, dtype=np.float64, copy=True) for x in inputs]
        g = np.zeros_like(xs[k])
        flat, gflat = xs[k].reshape(-1), g.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            up = loss(xs)
            flat[j] = old - eps
            down = loss(xs)
            flat[j] = old
            gflat[j] = (up - down) / (2 * eps)
        result.append(g)
    return result


def check_gradient(op_name: str, inputs: Sequence[np.ndarray], wrt: Sequence[int] = None,
                   is_train: bool = True, rtol: float = 1e-5, atol: float = 1e-7, seed: int = 0,
                   **params) -> None:
    """Symbolic gradient equals the numeric one (float64) for the inputs listed in ``wrt``."""
    inputs = [np.asarray(x, dtype=np.float64) for x in inputs]
    outs = forward(op_name, [x.copy() for x in inputs], is_train=is_train, seed=seed, **params)
    rng = np.random.default_rng(1234)
    ograds = [rng.standard_normal(o.shape) for o in outs]
    op = registry.get(op_name)
    nvis = op.num_visible_outputs(op.parse_params(params))
    for i in range(nvis, len(ograds)):
        ograds[i] = np.zeros_like(ograds[i])  # hidden outputs get no head gradient
    if wrt is None:
        wrt = range(len(op.list_arguments(op.parse_params(params))))
    wrt = list(wrt)
    sym = grads(op_name, inputs, ograds, is_train=is_train, seed=seed, **params)
    num = numeric_grads(op_name, inputs, ograds, wrt, is_train=is_train, seed=seed, **params)
    for k, n in zip(wrt, num):
        assert sym[k] is not None, f"no gradient for input {k}"
        np.testing.assert_allclose(sym[k], n, rtol=rtol, atol=atol, err_msg=f"input {k}")


def load_fixture(name: str) -> Dict[str, np.ndarray]:
    path = os.path.join(FIXTURES, name)
    if not os.path.exists(path):
        pytest.fail(f"missing fixture {path}; run tests/fixtures/ops_nn/make_fixtures.py")
    with np.load(path) as f:
        return dict(f)


def fixture_cases(name: str) -> Dict[str, Dict[str, np.ndarray]]:
    """The cases of ``<name>.npz`` as ``{case: {key: array}}`` (see make_fixtures.py)."""
    cases: Dict[str, Dict[str, np.ndarray]] = {}
    for key, value in load_fixture(name + ".npz").items():
        case, field = key.split("/", 1)
        cases.setdefault(case, {})[field] = value
    return cases


def check_fixture(op_name: str, case: Dict[str, np.ndarray], is_train: bool = True,
                  rtol: float = 1e-5, atol: float = 1e-6, backward: bool = True) -> None:
    """Outputs, input gradients and aux states agree with what MXNet 1.9.1 computed for ``case``."""
    import json
    params = json.loads(str(case["params"]))
    op = registry.get(op_name)
    names = op.list_inputs(op.parse_params(params))
    inputs = [case["in_" + n].copy() for n in names]
    outs = forward(op_name, inputs, is_train=is_train, **params)
    for i, o in enumerate(outs):
        if f"out{i}" in case:
            np.testing.assert_allclose(o, case[f"out{i}"], rtol=rtol, atol=atol, err_msg=f"out{i}")
    for n, x in zip(names, inputs):
        if "aux_" + n in case:
            np.testing.assert_allclose(x, case["aux_" + n], rtol=rtol, atol=atol, err_msg=n)
    if not backward or not any(k.startswith("grad_") for k in case):
        return
    heads = [case[f"ograd{i}"] for i in range(len(outs)) if f"ograd{i}" in case]
    heads += [np.zeros_like(o) for o in outs[len(heads):]] if heads else []
    gs = grads(op_name, [case["in_" + n] for n in names], heads or None, is_train=is_train, **params)
    for n, g in zip(names, gs):
        want = case.get("grad_" + n)
        if want is None:
            continue
        got = np.zeros_like(want) if g is None else g
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg="grad of " + n)


def both_paths(module, fn):
    """``fn()`` with ``module``'s Cython kernels (its ``_EXT``), then with the numpy twin."""
    fast = fn()
    saved, module._EXT = module._EXT, None
    try:
        return fast, fn()
    finally:
        module._EXT = saved
