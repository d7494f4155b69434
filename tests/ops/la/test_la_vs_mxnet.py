"""The linalg operators give MXNet 1.9.1's outputs and input gradients on the recorded cases.

The fixture (``tests/fixtures/la_ops_mxnet191.npz``) is made by ``make_la_fixture.py`` running
MXNet 1.9.1: inputs, visible outputs, head gradients and the input gradients autograd gave.
"""
import json
import os

import numpy as np
import pytest

from mxref import op_check

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "la_ops_mxnet191.npz")
_DATA = np.load(_PATH)
_SPECS = json.loads(str(_DATA["specs"]))


def _case_id(i):
    s = _SPECS[i]
    return f"{i}-{s['op']}-{'-'.join(s['inputs'])}-" + "-".join(f"{k}={v}" for k, v in s["params"].items())


@pytest.mark.parametrize("i", range(len(_SPECS)), ids=_case_id)
def test_matches_mxnet(i):
    """Same visible outputs (shape, dtype, values) and the same gradients for the same heads."""
    spec = _SPECS[i]
    name, params = "_linalg_" + spec["op"], spec["params"]
    arrays = [_DATA[f"in_{n}"] for n in spec["inputs"]]
    tol = {"rtol": 1e-4, "atol": 1e-5} if arrays[0].dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-10}
    outs = op_check.run_op(name, arrays, params)
    heads = [_DATA[f"head_{i}_{j}"] for j in range(spec["n_out"])]
    for j in range(spec["n_out"]):
        want = _DATA[f"out_{i}_{j}"]
        assert outs[j].shape == want.shape and outs[j].dtype == want.dtype, (outs[j].shape, want.shape)
        np.testing.assert_allclose(outs[j], want, err_msg=f"output {j}", **tol)
    grads = op_check.grads(name, arrays, params, heads, is_train=True)
    for j, g in enumerate(grads):
        np.testing.assert_allclose(g, _DATA[f"grad_{i}_{j}"], err_msg=f"gradient of input {j}", **tol)
