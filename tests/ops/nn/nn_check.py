"""The layer tests' spelling of the harness in ``mxref.op_check`` (parameters as keyword
arguments), and the MXNet 1.9.1 fixtures they compare with."""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence

import numpy as np
import pytest

from mxref import op_check
from mxref.ops import registry

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "ops_nn")


def forward(op_name: str, inputs: Sequence[np.ndarray], is_train: bool = False, seed: int = 0,
            **params) -> List[np.ndarray]:
    """Every output of one forward run (auxiliary inputs are updated in place)."""
    return op_check.forward(op_name, inputs, params, is_train=is_train, seed=seed)


def grads(op_name: str, inputs: Sequence[np.ndarray], ograds: Sequence[np.ndarray] = None,
          is_train: bool = True, seed: int = 0, **params) -> List[Optional[np.ndarray]]:
    """Input gradients from the op's symbolic gradient graph (``None`` where it returns ``None``)."""
    return op_check.grads(op_name, inputs, params, ograds, is_train=is_train, seed=seed)


def numeric_grads(op_name: str, inputs: Sequence[np.ndarray], ograds: Sequence[np.ndarray],
                  wrt: Sequence[int], is_train: bool = True, seed: int = 0, eps: float = 1e-6,
                  **params) -> List[np.ndarray]:
    """Central differences of ``sum_i <out_i, ograd_i>`` with respect to ``inputs[k]``, k in ``wrt``."""
    return op_check.numeric_grads(op_name, inputs, ograds, wrt, params, is_train=is_train, seed=seed,
                                  eps=eps)


def check_gradient(op_name: str, inputs: Sequence[np.ndarray], wrt: Sequence[int] = None,
                   is_train: bool = True, rtol: float = 1e-5, atol: float = 1e-7, seed: int = 0,
                   **params) -> None:
    """Symbolic gradient equals the numeric one (float64) for the inputs listed in ``wrt``."""
    op_check.check_op_gradient(op_name, inputs, params, wrt=wrt, rtol=rtol, atol=atol,
                               is_train=is_train, seed=seed)


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
